//! A test plugin that misbehaves on request, to exercise the host's sandbox.
//!
//! It serves one namespaced resource, `trials.hostile.example.com` (kind `Trial`, create and get). Creating a trial
//! runs the misbehaviour named by `spec.mode` inside the plugin call named by `spec.stage`:
//!
//! | `spec.mode` | What the call does |
//! |---|---|
//! | `ok` | behaves: the trial is created |
//! | `loop` | spins forever (the host's call deadline must stop it) |
//! | `bomb` | allocates 32 KiB blocks forever, writing into each (the host's memory limit must stop it) |
//! | `leak` | keeps [`LEAK_BYTES`] it allocated and wrote, then behaves (the host must not pool the grown instance) |
//! | `trap` | panics, which ends in a wasm trap |
//! | `abort` | calls `std::process::abort`: a wasm `unreachable` instruction |
//! | `garbage` | `prepare-for-create` returns text that is not JSON |
//! | `passwd` | reads `/etc/passwd` and, if that works, puts the content in `spec.stolen` (it must not work) |
//! | `socket` | connects to `127.0.0.1:<spec.port>` and, if that works, sets `spec.connected` (it must not work) |
//!
//! `spec.stage` is `prepare-for-create` (the default) or `validate`; the other call of the two behaves. `garbage` is
//! only possible in `prepare-for-create` (`validate` returns no JSON): with `validate`, the trial is invalid.
//!
//! When reading the file or connecting fails with an error instead of a trap, the call fails with a `forbidden`
//! error naming the plugin and the OS error.

use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};
use wasm_apiserver_guest::field::{self, FieldPath};
use wasm_apiserver_guest::{error, Error, Object, Validation};

wasm_apiserver_guest::bindings!(inline: "
    package example:hostile;

    world hostile {
        include wasm-apiserver:plugin/plugin@0.1.1;
        export wasm-apiserver:plugin/create-strategy@0.1.1;
    }
");

use exports::wasm_apiserver::plugin::{create_strategy, scheme};

/// The API group.
pub const GROUP: &str = "hostile.example.com";
/// The plural name of the only resource.
pub const TRIALS: &str = "trials";
/// The file the `passwd` mode tries to read.
pub const PASSWD: &str = "/etc/passwd";
/// The port the `socket` mode connects to when `spec.port` is absent.
pub const DEFAULT_PORT: u16 = 80;
/// The size of each block the `bomb` mode allocates. It writes only the first byte of each, so about one host page
/// (4 KiB) in eight becomes resident: writing every page would take the bomb about 40 ms of page faults on an idle
/// 2-core machine, close enough to the default 100 ms call deadline that on a loaded machine the deadline, not the
/// memory limit, would stop it. An eighth (8 MiB of the 64 MiB limit) still makes a leaked instance's memory show
/// in the server's resident set.
pub const BOMB_BLOCK: usize = 32 << 10;
/// How much the `leak` mode allocates, writes and never frees.
pub const LEAK_BYTES: usize = 16 << 20;
/// What the `garbage` mode returns from `prepare-for-create`: not JSON.
pub const GARBAGE: &str = "{\"apiVersion\": \"hostile.example.com/v1\", \"kind\": Trial, <<garbage>>";

/// A misbehaviour, selected by `spec.mode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Behave.
    Ok,
    /// Spin forever.
    Loop,
    /// Allocate forever.
    Bomb,
    /// Keep memory and behave.
    Leak,
    /// Panic (a wasm trap).
    Trap,
    /// Abort (the wasm `unreachable` instruction).
    Abort,
    /// Return invalid JSON from `prepare-for-create`.
    Garbage,
    /// Return an `internal` error (what an SDK makes of an exception in plugin code).
    Internal,
    /// Read [`PASSWD`].
    Passwd,
    /// Connect to a loopback TCP port.
    Socket,
}

impl Mode {
    /// Every mode, in documentation order.
    pub const ALL: [Mode; 10] = [
        Mode::Ok,
        Mode::Loop,
        Mode::Bomb,
        Mode::Leak,
        Mode::Trap,
        Mode::Abort,
        Mode::Garbage,
        Mode::Internal,
        Mode::Passwd,
        Mode::Socket,
    ];

    /// The mode's name in `spec.mode`.
    pub fn name(self) -> &'static str {
        match self {
            Mode::Ok => "ok",
            Mode::Loop => "loop",
            Mode::Bomb => "bomb",
            Mode::Leak => "leak",
            Mode::Trap => "trap",
            Mode::Abort => "abort",
            Mode::Garbage => "garbage",
            Mode::Internal => "internal",
            Mode::Passwd => "passwd",
            Mode::Socket => "socket",
        }
    }

    /// The mode named `name`, if any.
    pub fn parse(name: &str) -> Option<Mode> {
        Mode::ALL.into_iter().find(|m| m.name() == name)
    }
}

/// The call in which the misbehaviour happens, selected by `spec.stage`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stage {
    /// `create-strategy.prepare-for-create`.
    PrepareForCreate,
    /// `create-strategy.validate`.
    Validate,
}

impl Stage {
    /// Every stage.
    pub const ALL: [Stage; 2] = [Stage::PrepareForCreate, Stage::Validate];

    /// The stage's name in `spec.stage`.
    pub fn name(self) -> &'static str {
        match self {
            Stage::PrepareForCreate => "prepare-for-create",
            Stage::Validate => "validate",
        }
    }

    /// The stage named `name`, if any.
    pub fn parse(name: &str) -> Option<Stage> {
        Stage::ALL.into_iter().find(|s| s.name() == name)
    }
}

/// The `spec` of a Trial.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TrialSpec {
    /// The misbehaviour; absent means `ok`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<String>,
    /// The call that misbehaves; absent means `prepare-for-create`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stage: Option<String>,
    /// The loopback port the `socket` mode connects to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub port: Option<u16>,
    /// What the `passwd` mode read, if it could (it must not).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stolen: Option<String>,
    /// Whether the `socket` mode connected (it must not).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connected: Option<bool>,
    /// Fields this type does not know, preserved as they came.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// A Trial object.
pub type Trial = Object<TrialSpec>;

/// A trial's mode and stage, or the field errors that make it invalid.
pub fn plan(trial: &Trial) -> Result<(Mode, Stage), Vec<field::FieldError>> {
    let spec = FieldPath::new("spec");
    let mut errors = Vec::new();
    let mode = match trial.spec.mode.as_deref() {
        None => Some(Mode::Ok),
        Some(name) => Mode::parse(name).or_else(|| {
            let names = Mode::ALL.map(Mode::name);
            errors.push(field::not_supported(&spec.child("mode"), name, &names));
            None
        }),
    };
    let stage = match trial.spec.stage.as_deref() {
        None => Some(Stage::PrepareForCreate),
        Some(name) => Stage::parse(name).or_else(|| {
            let names = Stage::ALL.map(Stage::name);
            errors.push(field::not_supported(&spec.child("stage"), name, &names));
            None
        }),
    };
    match (mode, stage) {
        (Some(Mode::Garbage), Some(Stage::Validate)) => {
            errors.push(field::invalid(
                &spec.child("stage"),
                Stage::Validate.name(),
                "mode garbage is only possible in prepare-for-create",
            ));
            Err(errors)
        }
        (Some(mode), Some(stage)) if errors.is_empty() => Ok((mode, stage)),
        _ => Err(errors),
    }
}

/// What a misbehaviour produced, when it returned at all.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Nothing happened (`ok`).
    Behaved,
    /// The call must return [`GARBAGE`].
    Garbage,
    /// The file could be read: its content.
    Stolen(String),
    /// The connection was established.
    Connected,
}

/// Runs a mode's misbehaviour. `loop`, `bomb` and `abort` never return; `trap` panics.
pub fn misbehave(mode: Mode, port: Option<u16>) -> Result<Outcome, Error> {
    match mode {
        Mode::Ok => Ok(Outcome::Behaved),
        Mode::Loop => spin(),
        Mode::Bomb => bomb(),
        Mode::Leak => {
            let kept = vec![0x5A_u8; LEAK_BYTES];
            std::mem::forget(std::hint::black_box(kept));
            Ok(Outcome::Behaved)
        }
        Mode::Trap => panic!("hostile: this trial asked the plugin to trap"),
        Mode::Abort => std::process::abort(),
        Mode::Garbage => Ok(Outcome::Garbage),
        Mode::Internal => Err(error::internal("hostile: this trial asked for an internal error")),
        Mode::Passwd => match std::fs::read_to_string(PASSWD) {
            Ok(content) => Ok(Outcome::Stolen(content)),
            Err(e) => Err(error::forbidden(format!("plugin hostile cannot read {PASSWD}: {e}"))),
        },
        Mode::Socket => {
            let port = port.unwrap_or(DEFAULT_PORT);
            match std::net::TcpStream::connect(("127.0.0.1", port)) {
                Ok(_) => Ok(Outcome::Connected),
                Err(e) => Err(error::forbidden(format!(
                    "plugin hostile cannot connect to 127.0.0.1:{port}: {e}"
                ))),
            }
        }
    }
}

/// Spins forever.
fn spin() -> ! {
    let mut turns: u64 = 0;
    loop {
        turns = std::hint::black_box(turns.wrapping_add(1));
    }
}

/// Allocates [`BOMB_BLOCK`]-sized blocks forever, writing the first byte of each.
fn bomb() -> ! {
    let mut hoard: Vec<Vec<u8>> = Vec::new();
    loop {
        // Capacity only: the allocator leaves the block untouched, but for its header and this byte.
        let mut block = Vec::with_capacity(BOMB_BLOCK);
        block.push(0xA5_u8);
        hoard.push(std::hint::black_box(block));
    }
}

/// `prepare-for-create`: clears the status, and misbehaves when the trial's stage is `prepare-for-create`.
pub fn prepare(object: &str) -> Result<String, Error> {
    let mut trial = Trial::from_json(object)?;
    trial.status = None;
    let Ok((mode, Stage::PrepareForCreate)) = plan(&trial) else {
        // Invalid trials are reported by `validate`; other stages behave here.
        return trial.to_json();
    };
    match misbehave(mode, trial.spec.port)? {
        Outcome::Behaved => {}
        Outcome::Garbage => return Ok(GARBAGE.to_owned()),
        Outcome::Stolen(content) => trial.spec.stolen = Some(content),
        Outcome::Connected => trial.spec.connected = Some(true),
    }
    trial.to_json()
}

/// `validate`: reports invalid modes and stages, and misbehaves when the trial's stage is `validate`.
pub fn validate_trial(object: &str) -> Validation {
    let trial = match Trial::from_json(object) {
        Ok(trial) => trial,
        Err(e) => return Validation::from(vec![field::internal(&FieldPath::new("spec"), e.message())]),
    };
    let mode = match plan(&trial) {
        Ok((mode, Stage::Validate)) => mode,
        Ok((_, Stage::PrepareForCreate)) => return Validation::from(Vec::new()),
        Err(errors) => return Validation::from(errors),
    };
    let path = FieldPath::new("spec").child("mode");
    let errors = match misbehave(mode, trial.spec.port) {
        Ok(Outcome::Behaved) => Vec::new(),
        // `plan` refuses garbage in validate; keep the trial invalid all the same.
        Ok(Outcome::Garbage) => vec![field::invalid(&path, mode.name(), "not possible in validate")],
        // Leak what was obtained, so a broken sandbox shows in the response.
        Ok(Outcome::Stolen(content)) => vec![field::invalid(&path, content, "read the file")],
        Ok(Outcome::Connected) => vec![field::invalid(&path, mode.name(), "connected")],
        Err(e) => vec![field::forbidden(&path, e.message())],
    };
    Validation::from(errors)
}

/// The plugin.
pub struct Hostile;

impl scheme::Guest for Hostile {
    fn info() -> scheme::PluginInfo {
        let schema = json!({
            "type": "object",
            "description": "Trial asks the hostile test plugin to misbehave in a given way when it is created.",
            "properties": {
                "spec": {
                    "type": "object",
                    "description": "The misbehaviour.",
                    "properties": {
                        "mode": {
                            "type": "string",
                            "enum": Mode::ALL.map(Mode::name),
                            "description": "What to do: ok, loop, bomb, leak, trap, abort, garbage, internal, passwd or socket."
                        },
                        "stage": {
                            "type": "string",
                            "enum": Stage::ALL.map(Stage::name),
                            "description": "The call that misbehaves (default prepare-for-create)."
                        },
                        "port": {"type": "integer", "description": "The loopback port the socket mode connects to."},
                        "stolen": {"type": "string", "description": "What the passwd mode read (never, in a sandbox)."},
                        "connected": {"type": "boolean", "description": "Whether the socket mode connected."}
                    }
                }
            }
        });
        scheme::PluginInfo {
            group: GROUP.to_owned(),
            resources: vec![scheme::Resource {
                kind: "Trial".to_owned(),
                plural: TRIALS.to_owned(),
                singular: "trial".to_owned(),
                short_names: Vec::new(),
                categories: Vec::new(),
                scope: scheme::Scope::Namespaced,
                versions: vec![scheme::Version {
                    name: "v1".to_owned(),
                    served: true,
                    storage: true,
                    deprecated: false,
                    deprecation_warning: None,
                    schema: schema.to_string(),
                }],
            }],
            reads: Vec::new(),
        }
    }
}

impl create_strategy::Guest for Hostile {
    fn prepare_for_create(resource: String, object: String) -> Result<String, Error> {
        check_resource(&resource)?;
        prepare(&object)
    }

    fn validate(resource: String, object: String) -> Validation {
        if let Err(e) = check_resource(&resource) {
            return Validation::from(vec![field::internal(&FieldPath::default(), e.message())]);
        }
        validate_trial(&object)
    }
}

fn check_resource(resource: &str) -> Result<(), Error> {
    if resource == TRIALS {
        Ok(())
    } else {
        Err(error::not_found(format!("the plugin serves no resource {resource:?}")))
    }
}

// The exported symbols have names only a wasm linker accepts; native builds (unit tests) leave them out.
#[cfg(target_arch = "wasm32")]
export!(Hostile);

#[cfg(test)]
mod tests {
    use super::*;
    use wasm_apiserver_guest::FieldErrorKind;

    fn trial(spec: Value) -> String {
        json!({"apiVersion": "hostile.example.com/v1", "kind": "Trial", "metadata": {"name": "t"}, "spec": spec})
            .to_string()
    }

    fn decode(text: &str) -> Trial {
        Trial::from_json(text).expect("decode")
    }

    #[test]
    fn names_round_trip() {
        for mode in Mode::ALL {
            assert_eq!(Mode::parse(mode.name()), Some(mode));
        }
        for stage in Stage::ALL {
            assert_eq!(Stage::parse(stage.name()), Some(stage));
        }
        assert_eq!(Mode::parse("nap"), None);
        assert_eq!(Stage::parse("delete"), None);
    }

    #[test]
    fn plan_defaults_to_ok_in_prepare_for_create() {
        assert_eq!(
            plan(&decode(&trial(json!({})))),
            Ok((Mode::Ok, Stage::PrepareForCreate))
        );
        let spec = json!({"mode": "loop", "stage": "validate"});
        assert_eq!(plan(&decode(&trial(spec))), Ok((Mode::Loop, Stage::Validate)));
    }

    #[test]
    fn unknown_modes_and_stages_are_not_supported() {
        let errors = validate_trial(&trial(json!({"mode": "nap", "stage": "delete"}))).errors;
        let got: Vec<_> = errors.iter().map(|e| (e.kind, e.field.as_str())).collect();
        assert_eq!(
            got,
            [
                (FieldErrorKind::NotSupported, "spec.mode"),
                (FieldErrorKind::NotSupported, "spec.stage")
            ]
        );
    }

    #[test]
    fn garbage_in_validate_is_invalid() {
        let errors = validate_trial(&trial(json!({"mode": "garbage", "stage": "validate"}))).errors;
        assert_eq!(errors.len(), 1);
        assert_eq!(
            (errors[0].kind, errors[0].field.as_str()),
            (FieldErrorKind::Invalid, "spec.stage")
        );
    }

    #[test]
    fn ok_trials_are_prepared_and_valid() {
        let text = trial(json!({"mode": "ok", "note": "kept"}));
        let prepared: Value = serde_json::from_str(&prepare(&text).expect("prepare")).expect("json");
        assert_eq!(prepared["spec"], json!({"mode": "ok", "note": "kept"}));
        assert!(validate_trial(&text).is_valid());
    }

    #[test]
    fn garbage_is_not_json() {
        let out = prepare(&trial(json!({"mode": "garbage"}))).expect("prepare");
        assert_eq!(out, GARBAGE);
        assert!(serde_json::from_str::<Value>(&out).is_err());
    }

    #[test]
    fn misbehaviour_in_validate_leaves_prepare_alone() {
        // A mode that never returns must not run in the other stage.
        for mode in ["loop", "bomb", "trap", "abort"] {
            let text = trial(json!({"mode": mode, "stage": "validate"}));
            assert!(prepare(&text).is_ok(), "{mode}");
            let text = trial(json!({"mode": mode}));
            assert!(validate_trial(&text).is_valid(), "{mode}");
        }
    }

    #[test]
    #[should_panic(expected = "asked the plugin to trap")]
    fn trap_panics() {
        let _ = misbehave(Mode::Trap, None);
    }

    #[test]
    fn socket_errors_name_the_plugin() {
        // A port nobody listens on: bind one, learn it, and close it.
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map(|a| a.port())
            .expect("a free port");
        match misbehave(Mode::Socket, Some(port)) {
            Err(Error::Forbidden(message)) => {
                assert!(
                    message.contains("plugin hostile cannot connect to 127.0.0.1:"),
                    "{message}"
                )
            }
            other => panic!("expected a forbidden error, got {other:?}"),
        }
    }

    #[test]
    fn malformed_objects_are_bad_requests() {
        assert!(matches!(prepare("{"), Err(Error::BadRequest(_))));
        let errors = validate_trial("{").errors;
        assert_eq!(errors.len(), 1);
        assert_eq!(errors[0].kind, FieldErrorKind::Internal);
    }
}
