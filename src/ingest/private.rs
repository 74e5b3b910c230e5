//! Private temporary copies rewind makes (a database snapshot, a spooled pipe): created under
//! one recognisable prefix, removed when done, on SIGINT/SIGTERM/SIGHUP, and — when an earlier
//! run was killed outright — swept by the next run that makes one.
//!
//! Both the signal handler and the sweep are set up by the first private path (or tracked
//! backup) of a run, not at start: a run that makes none (most diagnoses) pays for neither a
//! handler thread nor a listing of the temporary folder, and has nothing to clean up on a signal.
//!
//! A run holds a shared lock on each copy it makes for as long as the copy exists (`flock` on
//! Unix). The system drops the lock when the process ends, however it ends (SIGKILL, a crash), so
//! the sweep tells a copy left behind from one in use by asking for the lock: a copy nobody
//! holds is removed, whatever process has its process id since, and one in use is kept however
//! old. The copy of a SQLite database needs a path to open, so copies are not unlinked while in
//! use; the lock makes reclaiming them safe instead.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, SystemTime};

/// Every private temporary file or folder starts with this name.
pub const PREFIX: &str = "rewind-private-";

/// Leftovers of earlier runs older than this are removed when their lock cannot be asked for
/// and their process seems alive (its id taken by another process, or a build before the locks).
const STALE_AFTER: Duration = Duration::from_secs(60 * 60);

/// A copy younger than this is kept even when nobody holds its lock: the moment between creating
/// a copy and locking it, in which another run could see it unlocked (a run whose process id
/// this one cannot see, in another process namespace sharing the temporary folder).
const CREATING: Duration = Duration::from_secs(10);

/// The private paths that exist now (removed by the signal handler).
static LIVE: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

/// A private temporary path, removed (file or folder) when dropped; locked while it lives (see
/// the module docs).
#[derive(Debug)]
pub struct PrivatePath {
    path: PathBuf,
    /// The handle that holds the shared lock (none where the system cannot lock it).
    _lock: Option<File>,
}

/// Sets up the signal handler and sweeps earlier runs' leftovers, once a run.
fn first_private_path() {
    install_signal_cleanup();
    static SWEPT: std::sync::Once = std::sync::Once::new();
    SWEPT.call_once(sweep_stale);
}

/// A shared lock on `file`, held while the returned handle is open; `None` where the system
/// cannot lock it.
fn hold(file: &File) -> Option<File> {
    let held = file.try_clone().ok()?;
    held.try_lock_shared().ok()?;
    Some(held)
}

impl PrivatePath {
    /// A new private file in the temporary folder, created now, readable by this user only
    /// (`0600`): `rewind-private-PID-N-what`, opened for writing. The first private path of a
    /// run installs the signal handler and sweeps earlier runs' leftovers.
    pub fn new_file(what: &str) -> std::io::Result<(PrivatePath, File)> {
        first_private_path();
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let nanos = SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        let path =
            std::env::temp_dir().join(format!("{PREFIX}{}-{nanos}-{n}-{what}", std::process::id()));
        let mut o = std::fs::OpenOptions::new();
        o.write(true).create_new(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt;
            o.mode(0o600);
        }
        let file = o.open(&path)?;
        if let Ok(mut live) = LIVE.lock() {
            live.push(path.clone());
        }
        let lock = hold(&file);
        Ok((PrivatePath { path, _lock: lock }, file))
    }

    /// A new private folder in the temporary folder, created now, readable by this user only
    /// (`0700`) and named unpredictably (`rewind-private-PID-RANDOM-what`), so that another user
    /// of a shared temporary folder can neither read what is copied into it nor plant a link in
    /// its place.
    pub fn new_dir(what: &str) -> std::io::Result<PrivatePath> {
        first_private_path();
        let (prefix, suffix) = (
            format!("{PREFIX}{}-", std::process::id()),
            format!("-{what}"),
        );
        let mut builder = tempfile::Builder::new();
        builder.prefix(&prefix).suffix(&suffix);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            builder.permissions(std::fs::Permissions::from_mode(0o700));
        }
        let dir = builder.tempdir()?.keep();
        if let Ok(mut live) = LIVE.lock() {
            live.push(dir.clone());
        }
        // A folder is locked through a handle on the folder itself (where one can be opened).
        let lock = File::open(&dir).ok().as_ref().and_then(hold);
        Ok(PrivatePath {
            path: dir,
            _lock: lock,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for PrivatePath {
    fn drop(&mut self) {
        remove(&self.path);
        if let Ok(mut live) = LIVE.lock() {
            live.retain(|p| p != &self.path);
        }
    }
}

/// Paths outside the temporary folder that a signal must remove (a backup being written): they
/// are registered while this guard lives. Dropping it only forgets them.
#[derive(Debug)]
pub struct Tracked(Vec<PathBuf>);

impl Tracked {
    pub fn new(paths: &[PathBuf]) -> Tracked {
        install_signal_cleanup();
        if let Ok(mut live) = LIVE.lock() {
            live.extend(paths.iter().cloned());
        }
        Tracked(paths.to_vec())
    }
}

impl Drop for Tracked {
    fn drop(&mut self) {
        if let Ok(mut live) = LIVE.lock() {
            live.retain(|p| !self.0.contains(p));
        }
    }
}

fn remove(path: &Path) {
    if path.is_dir() {
        let _ = std::fs::remove_dir_all(path);
    } else {
        let _ = std::fs::remove_file(path);
    }
}

/// Removes every private path that exists now (what a signal handler must do before exiting).
pub fn remove_all() {
    let paths = match LIVE.lock() {
        Ok(mut live) => std::mem::take(&mut *live),
        Err(_) => return,
    };
    for p in paths {
        remove(&p);
    }
}

/// The signal that is ending the run (0: none yet). Set in the signal handler itself, as the
/// signal arrives, before the thread that removes the copies wakes up.
static SIGNALLED: std::sync::LazyLock<std::sync::Arc<std::sync::atomic::AtomicUsize>> =
    std::sync::LazyLock::new(Default::default);

/// The signal (SIGINT, SIGTERM or SIGHUP) that is ending the run, if one arrived: the handler
/// is removing the private paths and will exit with 128 + its number.
pub fn signalled() -> Option<i32> {
    match SIGNALLED.load(std::sync::atomic::Ordering::SeqCst) {
        0 => None,
        n => i32::try_from(n).ok(),
    }
}

/// When a signal arrived, waits for the handler to end the process and returns never: what
/// the run would do now (print an error, exit with its own status) may be the doing of the
/// removal of its copies (a reader that found its copy gone), and must not be seen.
pub fn wait_if_signalled() {
    if signalled().is_some() {
        loop {
            std::thread::park();
        }
    }
}

/// What a signal does: say which one arrived (before anything is removed, so that an error
/// the removal causes is known for what it is), remove the private paths, and exit with the
/// shell's status for it (128 + its number: 130 for SIGINT, 143 for SIGTERM, 129 for SIGHUP).
fn on_signal(signal: i32) {
    SIGNALLED.store(
        usize::try_from(signal).unwrap_or(1),
        std::sync::atomic::Ordering::SeqCst,
    );
    remove_all();
    std::process::exit(128 + signal);
}

/// Installs the handler of SIGINT, SIGTERM and SIGHUP ([`on_signal`], on a thread of its own).
/// Safe to call more than once.
fn install_signal_cleanup() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        #[cfg(unix)]
        {
            use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
            for signal in [SIGINT, SIGTERM, SIGHUP] {
                if let Ok(number) = usize::try_from(signal) {
                    let _ = signal_hook::flag::register_usize(signal, SIGNALLED.clone(), number);
                }
            }
            if let Ok(mut signals) = signal_hook::iterator::Signals::new([SIGINT, SIGTERM, SIGHUP])
            {
                let _ = std::thread::Builder::new()
                    .name("rewind-signals".into())
                    .spawn(move || {
                        if let Some(signal) = signals.forever().next() {
                            on_signal(signal);
                        }
                    });
            }
        }
        #[cfg(not(unix))]
        {
            // Ctrl-C, the only signal there.
            let _ = ctrlc::set_handler(|| on_signal(2));
        }
    });
}

/// Whether another process holds the lock of the private file or folder at `path`: `None` when
/// that cannot be asked (the entry cannot be opened, or the system does not lock).
fn held_by_another(path: &Path) -> Option<bool> {
    let file = File::open(path).ok()?;
    match file.try_lock() {
        Ok(()) => Some(false),
        Err(std::fs::TryLockError::WouldBlock) => Some(true),
        Err(std::fs::TryLockError::Error(_)) => None,
    }
}

/// Removes private copies left by earlier runs that were killed before they could clean up:
/// entries of the temporary folder named `rewind-private-PID-…` that no process holds locked
/// (see the module docs), once they are more than a few seconds old, when their process is gone
/// or they are older than an hour. Where the lock cannot be asked for, the process and the
/// hour alone decide. Best effort: failures are ignored.
fn sweep_stale() {
    let Ok(entries) = std::fs::read_dir(std::env::temp_dir()) else {
        return;
    };
    let now = SystemTime::now();
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(rest) = name.to_str().and_then(|n| n.strip_prefix(PREFIX)) else {
            continue;
        };
        let Some(pid) = rest.split('-').next().and_then(|p| p.parse::<u32>().ok()) else {
            continue;
        };
        if pid == std::process::id() {
            continue;
        }
        let Some(age) = entry
            .metadata()
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| now.duration_since(t).ok())
        else {
            continue;
        };
        let path = entry.path();
        let stale = match held_by_another(&path) {
            Some(true) => false,
            Some(false) => age > CREATING && (age > STALE_AFTER || !process_alive(pid)),
            None => age > STALE_AFTER && !process_alive(pid),
        };
        if stale {
            remove(&path);
        }
    }
}

fn process_alive(pid: u32) -> bool {
    if cfg!(target_os = "linux") {
        Path::new(&format!("/proc/{pid}")).exists()
    } else {
        // Without a cheap way to ask, only the age decides.
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[cfg(unix)]
    fn private_folders_are_the_users_alone_and_removed_when_dropped() {
        use std::os::unix::fs::PermissionsExt;
        let p = PrivatePath::new_dir("test").unwrap();
        let mode = std::fs::metadata(p.path()).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o700, "{mode:o}");
        let name = p.path().file_name().unwrap().to_str().unwrap().to_owned();
        assert!(
            name.starts_with(&format!("{PREFIX}{}-", std::process::id())),
            "{name}"
        );
        assert!(name.ends_with("-test"), "{name}");
        std::fs::write(p.path().join("x"), "x").unwrap();
        let path = p.path().to_path_buf();
        drop(p);
        assert!(!path.exists());
    }

    #[test]
    fn private_paths_are_removed_when_dropped() {
        let (p, file) = PrivatePath::new_file("test").unwrap();
        drop(file);
        std::fs::write(p.path(), "x").unwrap();
        let path = p.path().to_path_buf();
        assert!(
            path.file_name()
                .unwrap()
                .to_str()
                .unwrap()
                .starts_with(PREFIX)
        );
        drop(p);
        assert!(!path.exists());
    }

    #[test]
    fn sweep_keeps_young_and_live_entries() {
        let (live, _) = PrivatePath::new_file("live").unwrap();
        std::fs::write(live.path(), "x").unwrap();
        sweep_stale();
        assert!(live.path().exists());
    }

    #[test]
    #[cfg(unix)]
    fn a_private_path_is_locked_while_it_lives() {
        let (file, _) = PrivatePath::new_file("locked").unwrap();
        let dir = PrivatePath::new_dir("locked").unwrap();
        // Another handle's exclusive lock is refused while the path lives (as another process's
        // would be: `flock` locks belong to the open file, not the process).
        assert_eq!(held_by_another(file.path()), Some(true));
        assert_eq!(held_by_another(dir.path()), Some(true));
        let other = std::env::temp_dir().join(format!("{PREFIX}unlocked-{}", std::process::id()));
        std::fs::write(&other, "x").unwrap();
        assert_eq!(held_by_another(&other), Some(false));
        std::fs::remove_file(&other).unwrap();
    }
}
