//! OpenCode's data folder (`$XDG_DATA_HOME/opencode`, by default `~/.local/share/opencode` on
//! every platform: OpenCode takes it from `xdg-basedir`, which does not branch by platform) and
//! the session stores it can hold (`opencode-storage.md` §1.1, §1.6).
//!
//! Which database an OpenCode build opens depends on the channel it was built for:
//!
//! * `opencode.db` for the channels `latest` (releases), `beta` and `prod`, and for any build
//!   run with `OPENCODE_DISABLE_CHANNEL_DB=1` (or `true`);
//! * `opencode-<channel>.db` for every other channel (characters other than letters, digits,
//!   `.`, `_` and `-` become `-`): a preview build is named after its branch (`opencode-dev.db`),
//!   a build run from source is `local` (`opencode-local.db`);
//! * `OPENCODE_DB` overrides both: an absolute path, or a file name in the data folder.
//!
//! The legacy `storage/` folder is what OpenCode before 1.2 reads; 1.2 and later import it once,
//! when they create their database, and leave it in place.

use std::path::{Path, PathBuf};

/// A store found in a data folder.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Store {
    pub path: PathBuf,
    /// The file or folder name (`opencode.db`, `storage/`).
    pub name: String,
    pub kind: StoreKind,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StoreKind {
    /// `opencode.db` (`channel` None) or `opencode-<channel>.db`.
    Database { channel: Option<String> },
    /// The legacy JSON storage folder.
    Storage,
}

/// The database every release reads.
pub const DEFAULT_DB: &str = "opencode.db";

/// Which store an OpenCode reads, in one paragraph.
pub const WHICH_STORE: &str = "Which store an OpenCode reads: a release (channel latest, also beta and prod) reads opencode.db; a build of another channel reads opencode-<channel>.db (a preview build is named after its branch, a build from source is `local`), unless OPENCODE_DISABLE_CHANNEL_DB=1 sends it to opencode.db; OPENCODE_DB=<file> overrides both (a file name is taken in the data folder). `opencode db path` prints the one yours reads. OpenCode before 1.2 read storage/; 1.2 and later import storage/ into their database once, when they create it.";

impl Store {
    /// Which OpenCode reads this store, in a few words.
    pub fn read_by(&self) -> String {
        match &self.kind {
            StoreKind::Database { channel: None } => {
                "releases (channel latest, beta, prod); any build with OPENCODE_DISABLE_CHANNEL_DB=1".into()
            }
            StoreKind::Database { channel: Some(c) } if c == "local" => {
                "builds from source (channel `local`)".into()
            }
            StoreKind::Database { channel: Some(c) } => format!("builds of the channel `{c}`"),
            StoreKind::Storage => "OpenCode before 1.2 (1.2 and later import it once)".into(),
        }
    }

    /// The channel this database belongs to, as stored in its name.
    pub fn channel(&self) -> Option<&str> {
        match &self.kind {
            StoreKind::Database { channel } => channel.as_deref(),
            StoreKind::Storage => None,
        }
    }
}

/// The channel of a database file name: `Some(None)` for `opencode.db`, `Some(Some(c))` for
/// `opencode-<c>.db`, `None` for any other name.
pub fn channel_of(name: &str) -> Option<Option<String>> {
    channel_named(name, DEFAULT_DB, "opencode-")
}

/// The channel of a database named `name`: `Some(None)` for `default`, `Some(Some(c))` for
/// `<prefix>c.db`, `None` for another file.
fn channel_named(name: &str, default: &str, prefix: &str) -> Option<Option<String>> {
    if name == default {
        return Some(None);
    }
    let channel = name.strip_prefix(prefix)?.strip_suffix(".db")?;
    (!channel.is_empty()).then(|| Some(channel.to_owned()))
}

/// The databases in `dir` whose file name `channel` knows: the default one first, then the
/// channel databases by name.
fn databases_in(dir: &Path, channel: fn(&str) -> Option<Option<String>>) -> Vec<Store> {
    let mut dbs: Vec<Store> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_file() || t.is_symlink()))
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            let channel = channel(&name)?;
            Some(Store {
                path: e.path(),
                name,
                kind: StoreKind::Database { channel },
            })
        })
        .collect();
    dbs.sort_by(|a, b| (a.channel().is_some(), &a.name).cmp(&(b.channel().is_some(), &b.name)));
    dbs
}

/// The stores in `dir`: its databases (`opencode.db` first, then the channel databases by
/// name), then `storage/` when it holds sessions.
pub fn stores_in(dir: &Path) -> Vec<Store> {
    let mut dbs = databases_in(dir, channel_of);
    let storage = dir.join("storage");
    if super::storage::root(&storage).as_deref() == Some(storage.as_path()) {
        dbs.push(Store {
            path: storage,
            name: "storage/".into(),
            kind: StoreKind::Storage,
        });
    }
    dbs
}

/// Kilo Code CLI's database in its data folder (`$XDG_DATA_HOME/kilo`, by default
/// `~/.local/share/kilo`): a release reads `kilo.db`; a build of another channel reads
/// `kilo-<channel>.db` (or `opencode-<channel>.db` when only that exists), unless
/// `KILO_DISABLE_CHANNEL_DB=1`; `KILO_DB` overrides both as `OPENCODE_DB` does (checked in Kilo
/// 7.7.7). `kilo.db` first, then the channel databases by name.
pub const KILO_DB: &str = "kilo.db";

/// Whether a database's file name is one Kilo gives its database (`kilo.db`,
/// `kilo-<channel>.db`): with Kilo's own tables, the evidence that a store is Kilo's.
pub fn is_kilo_db_name(path: &Path) -> bool {
    path.file_name()
        .and_then(|n| n.to_str())
        .is_some_and(|n| kilo_channel_of(n).is_some())
}

/// The channel of a Kilo database named `name` (see [`channel_of`]).
fn kilo_channel_of(name: &str) -> Option<Option<String>> {
    channel_named(name, KILO_DB, "kilo-")
}

/// The Kilo databases in `dir` (Kilo's data folder), with their channel.
pub fn kilo_stores_in(dir: &Path) -> Vec<Store> {
    databases_in(dir, kilo_channel_of)
}

/// Whether `dir` is an OpenCode data folder: it holds a database (`opencode.db` or a channel
/// database).
pub fn is_data_folder(dir: &Path) -> bool {
    dir.is_dir()
        && stores_in(dir)
            .iter()
            .any(|s| matches!(s.kind, StoreKind::Database { .. }))
}

/// The database `OPENCODE_DB` names (given its value), resolved as OpenCode resolves it.
pub fn opencode_db_override(value: &str, data: &Path) -> Option<PathBuf> {
    if value.is_empty() || value == ":memory:" {
        return None;
    }
    let p = Path::new(value);
    Some(if p.is_absolute() {
        p.to_path_buf()
    } else {
        data.join(p)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_kilo_databases() {
        let dir = tempfile::tempdir().unwrap();
        for f in [
            "kilo-dev.db",
            "kilo.db",
            "kilo.db-wal",
            "kilo-.db",
            "opencode.db",
        ] {
            std::fs::write(dir.path().join(f), "").unwrap();
        }
        let names: Vec<String> = kilo_stores_in(dir.path())
            .into_iter()
            .map(|s| s.name)
            .collect();
        assert_eq!(names, ["kilo.db", "kilo-dev.db"]);
    }

    #[test]
    fn database_names_give_their_channel() {
        assert_eq!(channel_of("opencode.db"), Some(None));
        assert_eq!(channel_of("opencode-dev.db"), Some(Some("dev".into())));
        assert_eq!(
            channel_of("opencode-stable.db"),
            Some(Some("stable".into()))
        );
        assert_eq!(channel_of("opencode-.db"), None);
        assert_eq!(channel_of("opencode.db-wal"), None);
        assert_eq!(
            channel_of("opencode.db.rewind-backup-20260101T000000Z"),
            None
        );
        assert_eq!(channel_of("other.db"), None);
    }

    #[test]
    fn finds_the_stores_of_a_data_folder() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        for f in [
            "opencode-stable.db",
            "opencode.db",
            "opencode.db-wal",
            "opencode-dev.db",
            "notes.txt",
        ] {
            std::fs::write(d.join(f), "").unwrap();
        }
        std::fs::create_dir_all(d.join("storage/session/global")).unwrap();
        std::fs::create_dir_all(d.join("storage/message")).unwrap();
        let names: Vec<String> = stores_in(d).into_iter().map(|s| s.name).collect();
        assert_eq!(
            names,
            [
                "opencode.db",
                "opencode-dev.db",
                "opencode-stable.db",
                "storage/"
            ]
        );
        assert!(is_data_folder(d));
        assert!(!is_data_folder(&d.join("storage")));
    }
}
