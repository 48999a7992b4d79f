//! The `wasm-apiserver` command.

use clap::{Parser, Subcommand};
use wasm_apiserver::options::ServeOptions;

/// mimalloc instead of glibc's allocator: a request allocates and frees many small JSON values across threads, and
/// glibc's malloc/free (with its consolidations) took about a quarter of the server's CPU time in the etcd create
/// benchmark.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// A Kubernetes-style API server whose resource types are WebAssembly components.
#[derive(Parser, Debug)]
#[command(name = "wasm-apiserver", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
#[allow(
    clippy::large_enum_variant,
    reason = "parsed once at start: boxing the serve options would gain nothing"
)]
enum Command {
    /// Serve the plugins of a directory.
    #[command(args_override_self = true)]
    Serve(ServeOptions),
    /// Write a kubeconfig with a client certificate signed by the server's CA.
    Kubeconfig(wasm_apiserver::kubeconfig::KubeconfigOptions),
    /// Work with plugin files.
    #[command(subcommand)]
    Plugin(PluginCommand),
    /// Snapshots of the embedded store: save one of a stopped server's data directory, read one, restore one.
    #[command(subcommand)]
    Snapshot(wasm_apiserver::snapshot::SnapshotCommand),
}

#[derive(Subcommand, Debug)]
enum PluginCommand {
    /// Load a plugin as the server would, print its resources, versions and verbs, and check it against the
    /// contract (exports, schemas, its examples' validity and conversion round trips). Exits non-zero on failure.
    Check {
        /// The `.wasm` file.
        file: std::path::PathBuf,
        /// Compile the component into this compile cache (a server's `--plugin-cache-dir`), or load it from there:
        /// a server using the cache then serves it without compiling it again.
        #[arg(long, value_name = "DIR", conflicts_with = "data_dir")]
        plugin_cache_dir: Option<std::path::PathBuf>,
        /// As `--plugin-cache-dir <DIR>/plugin-cache`: the cache of a server started with `--data-dir DIR` and no
        /// `--plugin-cache-dir`.
        #[arg(long, value_name = "DIR")]
        data_dir: Option<std::path::PathBuf>,
    },
    /// Compile a component for the server (its compile child process): the wasm on standard input, the compiled
    /// component written to `--out`.
    #[command(hide = true)]
    Compile {
        /// The size of the component, in bytes (a hint).
        #[arg(long, default_value_t = 0)]
        wasm_bytes: usize,
        /// Where to write the compiled component.
        #[arg(long)]
        out: std::path::PathBuf,
        /// Compile several functions at once: faster, but a larger peak of memory.
        #[arg(long)]
        parallel: bool,
        /// Compile with the baseline compiler (Winch), for the server's baseline tier.
        #[arg(long)]
        baseline: bool,
    },
    /// Write a new plugin project (one resource, in Rust, Python, JavaScript or Go) that `./build.sh` builds into
    /// `NAME.wasm`.
    New(wasm_apiserver::scaffold::NewOptions),
    /// Push a plugin to an OCI registry (`host[:port]/repository:tag`) in the layout `wkg oci push` and `oras push`
    /// write for WebAssembly; prints the reference by digest.
    Push(wasm_apiserver::push::PushOptions),
}

fn main() -> std::process::ExitCode {
    allocator_options();
    match run() {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {}", plugin_runtime::one_line(&format!("{e:#}")));
            std::process::ExitCode::FAILURE
        }
    }
}

/// Runs before `main` and before the first allocation, which makes mimalloc's first arena: mimalloc commits arenas
/// eagerly on Linux by default, and with that the pages start-up touched and freed stayed resident while the server
/// idles (the host alone: 10.3 MiB anonymous idle, 7.0 without; lists, GETs and creates ran as fast in A/B runs). An
/// option set in `main` comes too late for the arena already made. `MIMALLOC_ARENA_EAGER_COMMIT` still wins.
#[cfg(target_os = "linux")]
#[used]
#[allow(unsafe_code)] // a function pointer in .init_array: the loader calls it before main, as a C constructor
#[link_section = ".init_array"]
static EARLY_ALLOCATOR_OPTIONS: extern "C" fn() = early_allocator_options;

#[cfg(target_os = "linux")]
extern "C" fn early_allocator_options() {
    // mimalloc v3's option number (include/mimalloc.h, `mi_option_e`).
    const ARENA_EAGER_COMMIT: libmimalloc_sys::mi_option_t = 4;
    mimalloc_option_unless_set("MIMALLOC_ARENA_EAGER_COMMIT", ARENA_EAGER_COMMIT, 0);
}

/// Sets a mimalloc option unless its environment variable `env` is set (which mimalloc reads itself). Fit to run
/// before `main`: `var_os` of an absent short name neither allocates nor needs the Rust runtime.
fn mimalloc_option_unless_set(env: &str, option: libmimalloc_sys::mi_option_t, value: std::os::raw::c_long) {
    if std::env::var_os(env).is_none() {
        // SAFETY: sets an option's value, which mimalloc reads on its next use; the callers pass valid values.
        #[allow(unsafe_code)]
        unsafe {
            libmimalloc_sys::mi_option_set(option, value)
        };
    }
}

/// Makes memory the server no longer uses go back to the OS even when the server then stays idle, as after tenants
/// are removed or their instances evicted (the aim: RSS back within 10% after removing 1,000 tenants; with
/// the defaults it stayed several times higher):
/// - mimalloc returns freed pages 10 ms after they are freed (its `purge_delay`, 1 s by default in the version
///   linked), and a thread asks it every second to carry out the returns that are due: it otherwise does so only on
///   later allocations, which an idle server does not make. (A delay of 0 returned as much but gave memory back and
///   faulted it in again on every large response.)
/// - no transparent huge pages for the process: a 2 MiB page stays resident while any 4 KiB of it is in use, which
///   made the idle host's RSS 37 MiB instead of 23 MiB. (mimalloc's own `allow_thp` option is read before `main`.)
/// - arenas are not committed eagerly (set before `main`: [`EARLY_ALLOCATOR_OPTIONS`]).
/// - a block of more than 16 MiB (a large plugin file read whole to compile it) is mapped from the OS and unmapped
///   when freed, not carved from mimalloc's arenas: there, the pages of such a block were taken again before their
///   purge was due and stayed resident under their next, smaller use. A server that had just compiled the example
///   Python plugin (18.7 MB) and JavaScript plugin held 24.5 MiB of anonymous memory 40 s after it was ready, and
///   7.7 MiB with this (the same as with a purge delay of 0, which slows small allocations down instead). A lower
///   bound (4 MiB) also gave large responses fresh pages to fault in each time: Table and gzip lists of 12,000
///   objects (9.5 MB) took 15-30% longer.
///
/// The environment variables `MIMALLOC_PURGE_DELAY`, `MIMALLOC_ARENA_MAX_OBJECT_SIZE` (KiB) and `MIMALLOC_ALLOW_THP`
/// still win, for experiments.
fn allocator_options() {
    // mimalloc v3's option numbers (include/mimalloc.h, `mi_option_e`); libmimalloc-sys names only stable ones.
    const PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;
    const ARENA_MAX_OBJECT_SIZE: libmimalloc_sys::mi_option_t = 45;
    mimalloc_option_unless_set("MIMALLOC_PURGE_DELAY", PURGE_DELAY, 10);
    mimalloc_option_unless_set("MIMALLOC_ARENA_MAX_OBJECT_SIZE", ARENA_MAX_OBJECT_SIZE, 16 << 10);
    // How threads collect their own heaps (`component_base::memory`). Forced: a normal collect skips the pages that
    // were full, whose blocks other threads freed since (an evicted instance's).
    let _ = component_base::memory::THREAD_COLLECT.set(|| {
        // SAFETY: as below, for the calling thread's heap.
        #[allow(unsafe_code)]
        unsafe {
            libmimalloc_sys::mi_collect(true)
        }
    });
    let collector = std::thread::Builder::new()
        .name("mimalloc-collect".into())
        .spawn(|| loop {
            std::thread::sleep(std::time::Duration::from_secs(1));
            // SAFETY: mi_collect may be called from any thread at any time; it collects this thread's (empty) heap and
            // carries out the arenas' due purges, process-wide.
            #[allow(unsafe_code)]
            unsafe {
                libmimalloc_sys::mi_collect(false)
            };
        });
    if let Err(e) = collector {
        eprintln!("warning: no allocator collector thread: {e}");
    }
    if std::env::var_os("MIMALLOC_ALLOW_THP").is_none() {
        // Best effort: an older kernel without PR_SET_THP_DISABLE keeps its default.
        let _ = rustix::thread::disable_transparent_huge_pages(true);
    }
}

fn run() -> anyhow::Result<()> {
    let cli = Cli::parse();
    let tracing_config = match &cli.command {
        Command::Serve(opts) => opts
            .tracing_config_file
            .as_deref()
            .map(wasm_apiserver::tracing_setup::TracingConfig::read)
            .transpose()?,
        _ => None,
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .on_thread_park(component_base::memory::collect_if_due)
        .build()?;
    // The exporter runs on the runtime; kept until the command ends, so that the last spans are sent.
    let _tracing = runtime.block_on(async { wasm_apiserver::tracing_setup::init(tracing_config.as_ref()) })?;
    runtime.block_on(async move {
        match cli.command {
            Command::Plugin(PluginCommand::Check {
                file,
                plugin_cache_dir,
                data_dir,
            }) => {
                let cache_dir = plugin_cache_dir.or_else(|| data_dir.map(|d| d.join("plugin-cache")));
                let report =
                    tokio::task::spawn_blocking(move || loader::check::check(&file, cache_dir.as_deref())).await??;
                print!("{}", report.text);
                if report.problems.is_empty() {
                    println!("ok");
                    Ok(())
                } else {
                    anyhow::bail!("{} problem(s): {}", report.problems.len(), report.problems.join("; "))
                }
            }
            Command::Plugin(PluginCommand::Compile {
                wasm_bytes,
                out,
                parallel,
                baseline,
            }) => {
                let tier = match baseline {
                    true => plugin_runtime::runtime::Tier::Baseline,
                    false => plugin_runtime::runtime::Tier::Optimized,
                };
                plugin_runtime::cache::compile_command(wasm_bytes, &out, parallel, tier)
            }
            Command::Plugin(PluginCommand::New(opts)) => opts.run(),
            Command::Plugin(PluginCommand::Push(opts)) => opts.run().await,
            Command::Kubeconfig(opts) => opts.run(),
            Command::Snapshot(command) => command.run().await,
            Command::Serve(opts) => {
                match std::env::current_exe() {
                    Ok(exe) => plugin_runtime::cache::compile_in_child_processes(exe),
                    Err(e) => tracing::warn!(error = %e, "cannot find the server's executable: plugins compile in its own process"),
                }
                // On a worker, not on this thread: what start-up makes (the tenants' registries) is freed by other
                // threads when a tenant goes, and the thread running `block_on` never collects its allocator heap.
                tokio::spawn(async move {
                    let mut opts = opts;
                    // Behind kube-apiserver: who may front this server, read from it before the secure port starts.
                    let data_dir = opts.data_dir.clone();
                    opts.security.delegate_authentication(&data_dir, std::time::Duration::from_secs(120)).await?;
                    // The ports first: the server answers (starting) while its plugins compile.
                    let bound = opts.bind().await?;
                    let secure = bound.secure();
                    let chain = server::ChainSlot::default();
                    let mut serving =
                        tokio::spawn(server::serve(bound.listeners, chain.clone(), shutdown_signal()));
                    let server = tokio::select! {
                        server = opts.complete(secure) => server?,
                        _ = &mut serving => {
                            tracing::info!("stopped before start-up was done");
                            return anyhow::Ok(());
                        }
                    };
                    chain.set(server.chain);
                    tracing::info!("ready");
                    let _watcher = server.watcher;
                    serving.await?;
                    // The next host (or this one restarted) leads at once.
                    let _ = tokio::time::timeout(std::time::Duration::from_secs(2), server.leader.release()).await;
                    tracing::info!("stopped");
                    anyhow::Ok(())
                })
                .await?
            }
        }
    })
}

async fn shutdown_signal() {
    let ctrl_c = tokio::signal::ctrl_c();
    #[cfg(unix)]
    {
        let mut term = match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(s) => s,
            Err(_) => {
                let _ = ctrl_c.await;
                return;
            }
        };
        tokio::select! {
            _ = ctrl_c => {}
            _ = term.recv() => {}
        }
    }
    #[cfg(not(unix))]
    let _ = ctrl_c.await;
    tracing::info!("shutting down");
}
