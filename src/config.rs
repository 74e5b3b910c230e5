//! `rewind.toml`: which rules run, at what severity, on which paths.
//!
//! Found upward from the working directory (the first `rewind.toml`), or given with `--config`.
//! Command-line flags override it. Unknown keys and unknown rule names are errors that name them.
//!
//! ```toml
//! select = ["tool-error-dropped", "step-unclosed"]   # default: every rule
//! ignore = ["session-error"]
//! fail-on = "warning"                                 # error (default) | warning | info
//! exclude = ["fixtures/known-broken/**"]
//! baseline = "rewind-baseline.json"
//!
//! [severity]
//! undecodable-record = "error"
//!
//! [[overrides]]
//! paths = ["recordings/legacy/**"]
//! ignore = ["schema-violation"]
//! severity = { step-unclosed = "warning" }
//! ```

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use globset::{Glob, GlobSet, GlobSetBuilder};
use serde::Deserialize;

use crate::checks::Rule;
use crate::checks::diagnostic::{Finding, Severity};
use crate::core::RewindError;

/// The name of the configuration file.
pub const FILE_NAME: &str = "rewind.toml";

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct ConfigFile {
    pub select: Option<Vec<String>>,
    pub ignore: Option<Vec<String>>,
    pub fail_on: Option<Severity>,
    pub exclude: Option<Vec<String>>,
    pub baseline: Option<PathBuf>,
    /// Base of the rule documentation links in SARIF output (`{base}{rule}`).
    pub help_uri_base: Option<String>,
    #[serde(default)]
    pub severity: BTreeMap<String, Severity>,
    #[serde(default)]
    pub overrides: Vec<Override>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct Override {
    pub paths: Vec<String>,
    pub select: Option<Vec<String>>,
    pub ignore: Option<Vec<String>>,
    #[serde(default)]
    pub severity: BTreeMap<String, Severity>,
}

/// Which rules run.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Selection {
    /// Only these rules (all when empty).
    pub select: Vec<Rule>,
    /// Never these rules.
    pub ignore: Vec<Rule>,
}

impl Selection {
    pub fn enabled(&self, rule: Rule) -> bool {
        (self.select.is_empty() || self.select.contains(&rule)) && !self.ignore.contains(&rule)
    }
}

/// What applies to one file: the rules and their severities.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FilePolicy {
    pub selection: Selection,
    pub severity: BTreeMap<Rule, Severity>,
}

impl FilePolicy {
    /// Applies severity overrides to findings.
    pub fn apply(&self, findings: &mut [Finding]) {
        for f in findings {
            if let Some(s) = self.severity.get(&f.rule) {
                f.severity = *s;
            }
        }
    }
}

/// The resolved configuration of a run.
#[derive(Debug)]
pub struct Policy {
    /// Directory patterns are relative to: the config file's, else the working directory.
    pub root: PathBuf,
    pub base: FilePolicy,
    pub fail_on: Severity,
    pub exclude: GlobSet,
    pub baseline: Option<PathBuf>,
    pub help_uri_base: Option<String>,
    overrides: Vec<(GlobSet, RuleOverride)>,
    /// Rules selected on the command line: they run even where the file ignores them.
    cli_select: Vec<Rule>,
}

/// An override's rules, resolved.
#[derive(Debug)]
struct RuleOverride {
    select: Option<Vec<Rule>>,
    ignore: Vec<Rule>,
    severity: BTreeMap<Rule, Severity>,
}

/// Command-line settings that override the file.
#[derive(Debug, Default, Clone)]
pub struct Flags {
    pub select: Vec<String>,
    pub ignore: Vec<String>,
    pub fail_on: Option<Severity>,
    pub severity: Vec<(String, Severity)>,
}

/// The rules named, or an error naming the first name that is no rule's.
fn rules<'a>(
    names: impl IntoIterator<Item = &'a String>,
    origin: &str,
) -> Result<Vec<Rule>, RewindError> {
    names
        .into_iter()
        .map(|name| {
            name.parse().map_err(|_| RewindError::UnknownRuleIn {
                rule: name.clone(),
                origin: origin.to_owned(),
                hint: crate::checks::unknown_rule_hint(name),
            })
        })
        .collect()
}

/// [`rules`] for a map keyed by rule name.
fn severities(
    map: &BTreeMap<String, Severity>,
    origin: &str,
) -> Result<BTreeMap<Rule, Severity>, RewindError> {
    map.iter()
        .map(|(name, sev)| Ok((rules([name], origin)?[0], *sev)))
        .collect()
}

fn check_rules<'a>(
    names: impl Iterator<Item = &'a String>,
    origin: &str,
) -> Result<(), RewindError> {
    rules(names, origin).map(|_| ())
}

fn globset(patterns: &[String], origin: &str) -> Result<GlobSet, RewindError> {
    let mut b = GlobSetBuilder::new();
    for p in patterns {
        let glob = Glob::new(p).map_err(|e| {
            RewindError::Config(format!(
                "{origin}: bad path pattern `{}`: {}",
                crate::text::clip(p),
                crate::text::clip(&e.to_string())
            ))
        })?;
        b.add(glob);
    }
    b.build()
        .map_err(|e| RewindError::Config(format!("{origin}: {e}")))
}

/// Finds `rewind.toml` from `start` upward.
pub fn find(start: &Path) -> Option<PathBuf> {
    start
        .ancestors()
        .map(|d| d.join(FILE_NAME))
        .find(|p| p.is_file())
}

/// Reads and validates a configuration file.
pub fn read(path: &Path) -> Result<ConfigFile, RewindError> {
    let origin = path.display().to_string();
    let text = std::fs::read_to_string(path)
        .map_err(|e| RewindError::Config(format!("cannot read `{origin}`: {e}")))?;
    let cfg: ConfigFile = toml::from_str(&text).map_err(|e| {
        let line = e.span().map(|s| {
            text[..crate::text::floor_boundary(&text, s.start)]
                .matches('\n')
                .count()
                + 1
        });
        let at = line.map(|l| format!(" line {l}")).unwrap_or_default();
        RewindError::Config(format!(
            "`{origin}`{at}: {}",
            crate::text::clip(e.message().trim())
        ))
    })?;
    check_rules(
        cfg.select
            .iter()
            .flatten()
            .chain(cfg.ignore.iter().flatten())
            .chain(cfg.severity.keys()),
        &origin,
    )?;
    for o in &cfg.overrides {
        check_rules(
            o.select
                .iter()
                .flatten()
                .chain(o.ignore.iter().flatten())
                .chain(o.severity.keys()),
            &origin,
        )?;
    }
    Ok(cfg)
}

impl Policy {
    /// Builds the policy from an optional config file and the flags.
    pub fn new(config: Option<&Path>, flags: &Flags) -> Result<Policy, RewindError> {
        check_rules(
            flags
                .select
                .iter()
                .chain(&flags.ignore)
                .chain(flags.severity.iter().map(|(r, _)| r)),
            "the command line",
        )?;
        let cwd = std::env::current_dir().unwrap_or_default();
        let (file, root) = match config {
            Some(path) => (
                read(path)?,
                path.parent()
                    .filter(|p| !p.as_os_str().is_empty())
                    .map_or_else(|| cwd.clone(), Path::to_path_buf),
            ),
            None => (ConfigFile::default(), cwd),
        };
        let origin = config.map(|p| p.display().to_string()).unwrap_or_default();
        let cli = "the command line";
        let flag_select = rules(&flags.select, cli)?;
        let mut base = FilePolicy {
            selection: Selection {
                select: rules(file.select.iter().flatten(), &origin)?,
                ignore: rules(file.ignore.iter().flatten(), &origin)?,
            },
            severity: severities(&file.severity, &origin)?,
        };
        if !flag_select.is_empty() {
            base.selection.select.clone_from(&flag_select);
        }
        base.selection
            .ignore
            .retain(|rule| !flag_select.contains(rule));
        base.selection.ignore.extend(rules(&flags.ignore, cli)?);
        for (rule, sev) in &flags.severity {
            base.severity.insert(rules([rule], cli)?[0], *sev);
        }
        let overrides = file
            .overrides
            .into_iter()
            .map(|o| {
                Ok((
                    globset(&o.paths, &origin)?,
                    RuleOverride {
                        select: o.select.as_ref().map(|s| rules(s, &origin)).transpose()?,
                        ignore: rules(o.ignore.iter().flatten(), &origin)?,
                        severity: severities(&o.severity, &origin)?,
                    },
                ))
            })
            .collect::<Result<Vec<_>, RewindError>>()?;
        Ok(Policy {
            exclude: globset(file.exclude.as_deref().unwrap_or_default(), &origin)?,
            fail_on: flags.fail_on.or(file.fail_on).unwrap_or(Severity::Error),
            baseline: file.baseline.map(|b| root.join(b)),
            help_uri_base: file.help_uri_base,
            base,
            overrides,
            cli_select: flag_select,
            root,
        })
    }

    /// The path relative to the root, for matching patterns.
    fn relative<'a>(&self, path: &'a Path) -> std::borrow::Cow<'a, Path> {
        let abs = if path.is_absolute() {
            std::borrow::Cow::Borrowed(path)
        } else {
            std::borrow::Cow::Owned(
                std::env::current_dir()
                    .unwrap_or_default()
                    .join(path)
                    .components()
                    .collect::<PathBuf>(),
            )
        };
        match abs.strip_prefix(&self.root) {
            Ok(rel) => std::borrow::Cow::Owned(rel.to_path_buf()),
            Err(_) => std::borrow::Cow::Borrowed(path),
        }
    }

    pub fn excluded(&self, path: &Path) -> bool {
        self.exclude.is_match(self.relative(path).as_ref())
    }

    /// The rules and severities for `path`, with every matching override applied in order.
    pub fn for_path(&self, path: &Path) -> FilePolicy {
        let rel = self.relative(path);
        let mut p = self.base.clone();
        for (set, o) in &self.overrides {
            if !set.is_match(rel.as_ref()) {
                continue;
            }
            if let Some(select) = &o.select {
                p.selection.select.clone_from(select);
            }
            p.selection.ignore.extend(o.ignore.iter().copied());
            for (rule, sev) in &o.severity {
                p.severity.insert(*rule, *sev);
            }
        }
        if !self.cli_select.is_empty() {
            p.selection.select.clone_from(&self.cli_select);
            p.selection
                .ignore
                .retain(|rule| !self.cli_select.contains(rule));
        }
        p
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &Path, text: &str) -> PathBuf {
        let p = dir.join(FILE_NAME);
        std::fs::write(&p, text).unwrap();
        p
    }

    #[test]
    fn unknown_keys_and_rules_are_named() {
        let dir = tempfile::tempdir().unwrap();
        let p = write(
            dir.path(),
            "select = [\"step-unclosed\"]\nfail_on = \"warning\"\n",
        );
        let err = read(&p).map(|_| ()).unwrap_err().to_string();
        assert!(err.contains("line 2") && err.contains("fail_on"), "{err}");
        let p = write(dir.path(), "ignore = [\"no-such-rule\"]\n");
        let err = read(&p).map(|_| ()).unwrap_err().to_string();
        assert!(err.contains("no-such-rule"), "{err}");
        let p = write(
            dir.path(),
            "[[overrides]]\npaths = [\"a/**\"]\n[overrides.severity]\nbogus = \"info\"\n",
        );
        assert!(read(&p).is_err());
    }

    #[test]
    fn overrides_and_flags() {
        let dir = tempfile::tempdir().unwrap();
        let p = write(
            dir.path(),
            "ignore = [\"session-error\"]\nfail-on = \"warning\"\n[severity]\nstep-unclosed = \"info\"\n[[overrides]]\npaths = [\"legacy/**\"]\nignore = [\"schema-violation\"]\nseverity = { step-unclosed = \"warning\" }\n",
        );
        let flags = Flags {
            ignore: vec!["validation-crash".into()],
            ..Flags::default()
        };
        let policy = Policy::new(Some(&p), &flags).unwrap();
        assert_eq!(policy.fail_on, Severity::Warning);
        let plain = policy.for_path(&dir.path().join("new/x.log"));
        assert_eq!(
            plain.selection.ignore,
            [Rule::SessionError, Rule::ValidationCrash]
        );
        assert_eq!(
            plain.severity.get(&Rule::StepUnclosed),
            Some(&Severity::Info)
        );
        let legacy = policy.for_path(&dir.path().join("legacy/y.log"));
        assert!(legacy.selection.ignore.contains(&Rule::SchemaViolation));
        assert_eq!(
            legacy.severity.get(&Rule::StepUnclosed),
            Some(&Severity::Warning)
        );
    }
}
