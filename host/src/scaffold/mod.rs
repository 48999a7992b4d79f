//! `wasm-apiserver plugin new NAME --lang rust|python|js|go|c`: writes a ready plugin project, one resource whose kind and
//! plural come from `NAME`, that builds with one command (`./build.sh`, writing `NAME.wasm`) and is served when that
//! file is dropped into a server's plugin directory.
//!
//! A project does not depend on this repository: the SDK of its language and the WIT contract are copied into its
//! `sdk/` directory (for Rust, `sdk/` is the `wasm-apiserver-guest` crate with the contract in `sdk/wit/`, which its
//! build script prefers to the repository's). Every file comes from this binary: the project templates under
//! `templates/` and the SDK files themselves, embedded with `include_str!`, so a project made by a given
//! `wasm-apiserver` is built against the contract that server speaks. What a project still needs from the machine is
//! its language's toolchain (cargo with the `wasm32-wasip2` target; Python 3 with componentize-py, which the build
//! installs; Node.js >= 20.19 and npm; Go >= 1.25, with wasm-tools, which the build installs) and the package registries for its dependencies.

mod names;
mod templates;

use std::path::{Path, PathBuf};

use anyhow::{bail, Context as _};
use clap::{Args, ValueEnum};

pub use names::Names;
use templates::File;

/// The language of a new plugin project.
#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lang {
    /// Rust, with the `wasm-apiserver-guest` crate (cargo, target `wasm32-wasip2`).
    Rust,
    /// Python, with `wasm_apiserver.py` (componentize-py 0.25).
    Python,
    /// JavaScript, with `wasm-apiserver.js` (componentize-js 0.23).
    Js,
    /// Go, with the Go SDK (`wasm-apiserver.io/guest`; stock Go, `GOOS=wasip1`).
    Go,
    /// C, with the C SDK (`wasm_apiserver.h`; clang for `wasm32-wasi`, cJSON).
    C,
}

impl Lang {
    /// The name `--lang` takes.
    pub fn name(self) -> &'static str {
        match self {
            Lang::Rust => "rust",
            Lang::Python => "python",
            Lang::Js => "js",
            Lang::Go => "go",
            Lang::C => "c",
        }
    }
}

/// Options of `wasm-apiserver plugin new`.
#[derive(Args, Debug, Clone)]
pub struct NewOptions {
    /// The plugin's name, a DNS-1123 label starting with a letter, such as `widget`: the kind (`Widget`), the plural
    /// (`widgets`), the default group and the component's file name (`widget.wasm`) are made from it.
    #[arg(value_name = "NAME", value_parser = names::parse_name)]
    pub name: String,
    /// The language of the project.
    #[arg(long, value_enum)]
    pub lang: Lang,
    /// The API group (default `<NAME>.example.com`).
    #[arg(long, value_name = "GROUP", value_parser = names::parse_group)]
    pub group: Option<String>,
    /// Where to write the project (default `./<NAME>`); it must not exist or be empty.
    #[arg(long, value_name = "PATH")]
    pub dir: Option<PathBuf>,
}

impl NewOptions {
    /// Writes the project and prints what was made and what to do next.
    pub fn run(&self) -> anyhow::Result<()> {
        let names = Names::new(&self.name, self.group.as_deref()).map_err(anyhow::Error::msg)?;
        let dir = self.dir.clone().unwrap_or_else(|| PathBuf::from(&self.name));
        let written = create(&dir, &names, self.lang)?;
        let mut text = format!(
            "created the {} plugin project {} in {}: kind {}, resource {}.{} (v1)\n",
            self.lang.name(),
            names.name,
            dir.display(),
            names.kind,
            names.plural,
            names.group
        );
        for path in &written {
            text += &format!("  {}\n", path.display());
        }
        text += &format!(
            "next:\n  cd {} && ./build.sh    # writes {name}.wasm\n  \
             wasm-apiserver plugin check {name}.wasm\n  \
             cp {name}.wasm PLUGIN_DIR/    # a server serving PLUGIN_DIR picks it up\n",
            dir.display(),
            name = names.name
        );
        // Written, not printed: a closed standard output (`| head`) is an error to report, not a panic.
        std::io::Write::write_all(&mut std::io::stdout(), text.as_bytes()).context("writing to standard output")
    }
}

/// Writes the project for `names` in `lang` into `dir`, which must not exist or be an empty directory. Returns the
/// files written, relative to `dir`.
pub fn create(dir: &Path, names: &Names, lang: Lang) -> anyhow::Result<Vec<PathBuf>> {
    match std::fs::read_dir(dir) {
        Ok(mut entries) => {
            if entries.next().is_some() {
                bail!("{} already exists and is not empty", dir.display());
            }
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotADirectory => {
            bail!("{} already exists and is not a directory", dir.display())
        }
        Err(e) => return Err(e).with_context(|| format!("reading {}", dir.display())),
    }
    let files = templates::files(lang, names);
    let mut written = Vec::with_capacity(files.len());
    for File { path, text, executable } in files {
        let target = dir.join(&path);
        if let Some(parent) = target.parent() {
            std::fs::create_dir_all(parent).with_context(|| format!("creating {}", parent.display()))?;
        }
        std::fs::write(&target, text).with_context(|| format!("writing {}", target.display()))?;
        if executable {
            make_executable(&target)?;
        }
        written.push(path);
    }
    Ok(written)
}

#[cfg(unix)]
fn make_executable(path: &Path) -> anyhow::Result<()> {
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755))
        .with_context(|| format!("making {} executable", path.display()))
}

#[cfg(not(unix))]
fn make_executable(_path: &Path) -> anyhow::Result<()> {
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_project_is_written_into_a_new_or_empty_directory_only() {
        let tmp = tempfile::tempdir().unwrap();
        let names = Names::new("widget", None).unwrap();
        let dir = tmp.path().join("widget");
        let written = create(&dir, &names, Lang::Python).unwrap();
        assert!(written.contains(&PathBuf::from("widget_plugin.py")), "{written:?}");
        assert!(dir.join("sdk/wasm_apiserver.py").is_file());
        let e = create(&dir, &names, Lang::Python).unwrap_err().to_string();
        assert!(e.contains("already exists and is not empty"), "{e}");

        let empty = tmp.path().join("empty");
        std::fs::create_dir(&empty).unwrap();
        create(&empty, &names, Lang::Js).unwrap();
        assert!(empty.join("src/widget.js").is_file());

        let file = tmp.path().join("file");
        std::fs::write(&file, "x").unwrap();
        let e = create(&file, &names, Lang::Rust).unwrap_err().to_string();
        assert!(e.contains("not a directory"), "{e}");
    }

    #[cfg(unix)]
    #[test]
    fn build_scripts_are_executable() {
        use std::os::unix::fs::PermissionsExt as _;
        let tmp = tempfile::tempdir().unwrap();
        let names = Names::new("widget", None).unwrap();
        for lang in [Lang::Rust, Lang::Python, Lang::Js, Lang::Go, Lang::C] {
            let dir = tmp.path().join(lang.name());
            create(&dir, &names, lang).unwrap();
            for script in ["build.sh", "sdk/build-plugin.sh"] {
                let path = dir.join(script);
                if lang == Lang::Rust && script != "build.sh" {
                    continue;
                }
                let mode = std::fs::metadata(&path).unwrap().permissions().mode();
                assert_eq!(mode & 0o111, 0o111, "{}", path.display());
            }
        }
    }
}
