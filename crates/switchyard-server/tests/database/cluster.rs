//! A throwaway PostgreSQL cluster of the test's own, on a free 127.0.0.1 port, that the test
//! stops and starts (the outage test; the shared server on 5432 is never stopped), or
//! configures its own way (the TLS tests: a certificate, `ssl = on`, `pg_hba.conf` lines).
//!
//! `initdb` makes it in a scratch directory (`trust` authentication, `fsync = off`: an
//! immediate stop is no power cut, the operating system keeps what was written; commits stay
//! synchronous, since an immediate stop loses WAL not yet written); it is
//! stopped (`pg_ctl stop -m immediate`) and its directory removed on drop, panics included.
//! PostgreSQL refuses to run as root: run as root, every command runs as the `postgres` OS
//! user (`runuser`) in a directory that user owns; run as anyone else, directly.

use std::os::unix::fs::MetadataExt as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// Where the PostgreSQL binaries are looked for when `initdb` is not on `PATH`.
const FALLBACK_BIN: &str = "/usr/lib/postgresql/15/bin";

/// A PostgreSQL cluster in a scratch directory, stopped and removed on drop.
pub struct Cluster {
    /// Holds `data/` (the cluster), `socket/` and `log`.
    dir: PathBuf,
    /// Where `initdb` and `pg_ctl` are.
    bin: PathBuf,
    /// Run PostgreSQL's commands as the `postgres` OS user (we are root).
    as_postgres: bool,
    /// The port it listens on, 127.0.0.1 only.
    pub port: u16,
}

impl Cluster {
    /// A new cluster, started; `None` (said on stderr) when `initdb` is not found and
    /// `SWITCHYARD_REQUIRE_POSTGRES` is unset.
    pub fn start(tag: &str) -> Option<Self> {
        let Some(bin) = binaries() else {
            assert!(
                std::env::var_os("SWITCHYARD_REQUIRE_POSTGRES").is_none(),
                "initdb and pg_ctl are required (SWITCHYARD_REQUIRE_POSTGRES) but are neither on PATH nor in {FALLBACK_BIN}"
            );
            eprintln!("SKIPPED: initdb is neither on PATH nor in {FALLBACK_BIN}; set SWITCHYARD_REQUIRE_POSTGRES=1 to fail instead");
            return None;
        };
        // the effective uid owns /proc/self
        let as_postgres = std::fs::metadata("/proc/self").is_ok_and(|m| m.uid() == 0);
        let port = {
            let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            l.local_addr().unwrap().port()
        };
        let dir = std::env::temp_dir().join(format!("switchyard-pg-{}-{tag}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("socket")).unwrap();
        let cluster = Self {
            dir,
            bin,
            as_postgres,
            port,
        };
        if as_postgres {
            cluster.give_to_postgres();
        }
        let data = cluster.data();
        cluster.run(
            "initdb",
            &[
                "-D",
                &data,
                "-U",
                "postgres",
                "--auth=trust",
                "-E",
                "UTF8",
                "--no-sync",
                "--no-instructions",
            ],
        );
        let conf = format!(
            "\nlisten_addresses = '127.0.0.1'\nport = {port}\nunix_socket_directories = '{}'\n\
             fsync = off\nmax_connections = 40\n",
            cluster.dir.join("socket").display()
        );
        let path = Path::new(&data).join("postgresql.conf");
        let mut text = std::fs::read_to_string(&path).unwrap();
        text.push_str(&conf);
        std::fs::write(&path, text).unwrap();
        cluster.up();
        Some(cluster)
    }

    /// A file in its scratch directory (removed with it), for the test's own files.
    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }

    /// Write `contents` to `name` in its data directory, readable by the server only (as
    /// PostgreSQL wants of `server.key`).
    pub fn write_private(&self, name: &str, contents: &str) {
        use std::os::unix::fs::PermissionsExt as _;
        let path = Path::new(&self.data()).join(name);
        std::fs::write(&path, contents).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        if self.as_postgres {
            let data = std::fs::metadata(self.data()).unwrap();
            std::os::unix::fs::chown(&path, Some(data.uid()), Some(data.gid())).unwrap();
        }
    }

    /// Add `lines` to `postgresql.conf` (later settings win) and make `hba` the whole of
    /// `pg_hba.conf`; they take effect at the next [`restart`](Self::restart).
    pub fn configure(&self, lines: &str, hba: &str) {
        let conf = Path::new(&self.data()).join("postgresql.conf");
        let mut text = std::fs::read_to_string(&conf).unwrap();
        text.push('\n');
        text.push_str(lines);
        std::fs::write(&conf, text).unwrap();
        std::fs::write(Path::new(&self.data()).join("pg_hba.conf"), hba).unwrap();
    }

    /// Stop it and start it again (a new configuration, TLS included).
    pub fn restart(&self) {
        self.down();
        self.up();
    }

    /// Its `postgres` database's URL.
    pub fn url(&self) -> String {
        format!("postgres://postgres@127.0.0.1:{}/postgres", self.port)
    }

    /// Start it and wait until it accepts connections (`pg_ctl start -w`).
    pub fn up(&self) {
        let log = self.dir.join("log").display().to_string();
        self.run(
            "pg_ctl",
            &["start", "-w", "-t", "60", "-D", &self.data(), "-l", &log],
        );
    }

    /// Stop it at once, as a crash would (`pg_ctl stop -m immediate`): connections drop
    /// without a goodbye.
    pub fn down(&self) {
        self.run(
            "pg_ctl",
            &[
                "stop",
                "-w",
                "-t",
                "60",
                "-m",
                "immediate",
                "-D",
                &self.data(),
            ],
        );
    }

    fn data(&self) -> String {
        self.dir.join("data").display().to_string()
    }

    /// The scratch directory becomes the `postgres` user's (it runs the cluster).
    fn give_to_postgres(&self) {
        let id = |flag: &str| -> u32 {
            let out = Command::new("id")
                .args([flag, "postgres"])
                .output()
                .unwrap();
            assert!(
                out.status.success(),
                "running as root, the cluster runs as the `postgres` OS user, and there is none"
            );
            String::from_utf8_lossy(&out.stdout).trim().parse().unwrap()
        };
        let (uid, gid) = (id("-u"), id("-g"));
        for path in [self.dir.clone(), self.dir.join("socket")] {
            std::os::unix::fs::chown(&path, Some(uid), Some(gid)).unwrap();
        }
    }

    /// The output of `program args` (one of PostgreSQL's), which must succeed.
    fn command(&self, program: &str, args: &[&str]) -> Output {
        let exe = self.bin.join(program);
        let mut cmd = if self.as_postgres {
            let mut c = Command::new("runuser");
            c.args(["-u", "postgres", "--"]).arg(&exe);
            c
        } else {
            Command::new(&exe)
        };
        cmd.args(args)
            .current_dir(&self.dir)
            .env("LC_ALL", "C")
            .env_remove("PGDATA")
            .env_remove("PGPORT");
        cmd.output()
            .unwrap_or_else(|e| panic!("cannot run {}: {e}", exe.display()))
    }

    fn run(&self, program: &str, args: &[&str]) {
        let out = self.command(program, args);
        assert!(
            out.status.success(),
            "{program} {args:?} failed: {}{}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr),
            std::fs::read_to_string(self.dir.join("log")).unwrap_or_default()
        );
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        // stopped already, or never started: pg_ctl says so and nothing else happens
        let _ = self.command(
            "pg_ctl",
            &["stop", "-w", "-m", "immediate", "-D", &self.data()],
        );
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// The directory holding `initdb` and `pg_ctl`: `initdb`'s on `PATH` (links followed), else
/// [`FALLBACK_BIN`].
fn binaries() -> Option<PathBuf> {
    let on_path = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|p| p.join("initdb"))
            .find(|p| p.is_file())
    });
    let initdb =
        on_path.or_else(|| Some(Path::new(FALLBACK_BIN).join("initdb")).filter(|p| p.is_file()))?;
    let bin = std::fs::canonicalize(initdb).ok()?.parent()?.to_path_buf();
    bin.join("pg_ctl").is_file().then_some(bin)
}
