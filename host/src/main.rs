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
}

#[derive(Subcommand, Debug)]
enum PluginCommand {
    /// Load a plugin as the server would, print its resources, versions and verbs, and check it against the
    /// contract (exports, schemas, its examples' validity and conversion round trips). Exits non-zero on failure.
    Check {
        /// The `.wasm` file.
        file: std::path::PathBuf,
    },
}

fn main() -> std::process::ExitCode {
    match run() {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {}", wasm_apiserver::plugins::one_line(&format!("{e:#}")));
            std::process::ExitCode::FAILURE
        }
    }
}

fn run() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .init();
    let cli = Cli::parse();
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    runtime.block_on(async move {
        match cli.command {
            Command::Plugin(PluginCommand::Check { file }) => {
                let report =
                    tokio::task::spawn_blocking(move || wasm_apiserver::plugins::check::check(&file)).await??;
                print!("{}", report.text);
                if report.problems.is_empty() {
                    println!("ok");
                    Ok(())
                } else {
                    anyhow::bail!("{} problem(s): {}", report.problems.len(), report.problems.join("; "))
                }
            }
            Command::Kubeconfig(opts) => opts.run(),
            Command::Serve(opts) => {
                let server = opts.complete().await?;
                wasm_apiserver::server::serve(server.listeners, server.chain, shutdown_signal()).await;
                tracing::info!("stopped");
                Ok(())
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
