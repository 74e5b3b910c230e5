//! Redaction: finding secrets in an input's text and putting placeholders in their place,
//! without breaking the text's structure.
//!
//! [`Redactor`] holds the detectors and the placeholders given so far (the same secret gets the
//! same placeholder in every file of a run, numbered per kind by first appearance);
//! [`scan::Scanner`] rewrites text structurally: JSON strings are decoded, redacted and encoded
//! again, member names are never touched, the values of ids and times are kept, and the values
//! of secret positions (an `authorization` header, an `apiKey`, an `env` map) are replaced whole.
//! What is not a complete JSON string (a torn line, plain text) is redacted with the patterns
//! only. Nothing here ever writes a secret anywhere but into the map of placeholders.

pub mod detect;
pub mod file;
pub mod scan;
pub mod sink;

use std::collections::{BTreeMap, HashMap};

use regex::bytes::{Regex, RegexSet};

use detect::Detector;

/// What the user adds to the built-in detection.
#[derive(Debug, Default, Clone)]
pub struct Options {
    /// `--pattern REGEX`: more secrets (a group named `s` narrows the secret to that group).
    pub patterns: Vec<String>,
    /// `--keep REGEX`: a candidate any of these matches is left as it is.
    pub keep: Vec<String>,
    /// Replace home folders (`/home/NAME`, `/Users/NAME`, `$HOME`) by `~`.
    pub home: bool,
}

/// Why options were refused.
#[derive(Debug, thiserror::Error)]
pub enum OptionsError {
    #[error("`--{flag}` pattern number {index} is not a valid regular expression: {reason}")]
    BadPattern {
        flag: &'static str,
        index: usize,
        reason: String,
    },
}

/// Where a replacement was made: set by the caller before it hands text over.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Place {
    /// The file (as shown to the user).
    pub file: String,
    /// A line number, or a row in words for a database.
    pub at: String,
}

/// One replacement, for `--dry-run`: where, the kind, the placeholder; never the secret.
#[derive(Debug, Clone)]
pub struct Hit {
    pub place: Place,
    pub kind: String,
    pub placeholder: String,
}

/// The detectors and the placeholders of one run.
pub struct Redactor {
    detectors: Vec<Detector>,
    set: Option<RegexSet>,
    keep: Vec<Regex>,
    home: Vec<Regex>,
    placeholders: HashMap<Vec<u8>, String>,
    numbers: BTreeMap<String, usize>,
    /// Replacements per kind (every occurrence).
    counts: BTreeMap<String, usize>,
    place: Place,
    /// Every replacement, when asked for (`--dry-run`).
    hits: Option<Vec<Hit>>,
}

/// A placeholder, recognised so that a second pass (or a second run) leaves it alone.
const PLACEHOLDER: &str = r"^\[REDACTED:[a-z0-9-]+:[0-9]+\]$";

impl Redactor {
    /// The built-in detectors, then `options.patterns`.
    pub fn new(options: &Options) -> Result<Self, OptionsError> {
        let mut detectors = detect::built_in();
        for (i, p) in options.patterns.iter().enumerate() {
            let regex = Regex::new(p).map_err(|e| OptionsError::BadPattern {
                flag: "pattern",
                index: i + 1,
                reason: e.to_string().lines().last().unwrap_or_default().to_owned(),
            })?;
            detectors.push(Detector {
                kind: "pattern".to_owned(),
                regex,
            });
        }
        let mut keep = Vec::new();
        for (i, p) in options.keep.iter().enumerate() {
            keep.push(Regex::new(p).map_err(|e| OptionsError::BadPattern {
                flag: "keep",
                index: i + 1,
                reason: e.to_string().lines().last().unwrap_or_default().to_owned(),
            })?);
        }
        if let Ok(re) = Regex::new(PLACEHOLDER) {
            keep.push(re);
        }
        let mut home = Vec::new();
        if options.home {
            if let Some(h) = std::env::var_os("HOME").and_then(|h| h.into_string().ok())
                && h.len() > 1
                && let Ok(re) = Regex::new(&format!(
                    r"{}(?:[^A-Za-z0-9._-]|$)",
                    regex::escape(h.trim_end_matches('/'))
                ))
            {
                home.push(re);
            }
            if let Ok(re) = Regex::new(detect::HOME) {
                home.push(re);
            }
        }
        let set = detect::set_of(&detectors);
        Ok(Redactor {
            detectors,
            set,
            keep,
            home,
            placeholders: HashMap::new(),
            numbers: BTreeMap::new(),
            counts: BTreeMap::new(),
            place: Place::default(),
            hits: None,
        })
    }

    /// Keep a list of every replacement (for `--dry-run`).
    pub fn record_hits(&mut self) {
        self.hits = Some(Vec::new());
    }

    /// Where the text handed over next comes from.
    pub fn set_place(&mut self, file: &str, at: impl Into<String>) {
        if self.place.file != file {
            self.place.file = file.to_owned();
        }
        self.place.at = at.into();
    }

    /// The replacements recorded so far, taken.
    pub fn take_hits(&mut self) -> Vec<Hit> {
        self.hits.as_mut().map(std::mem::take).unwrap_or_default()
    }

    /// Replacements per kind so far.
    pub fn counts(&self) -> &BTreeMap<String, usize> {
        &self.counts
    }

    /// Distinct secrets replaced so far.
    pub fn distinct(&self) -> usize {
        self.placeholders.len()
    }

    fn kept(&self, secret: &[u8]) -> bool {
        secret.is_empty() || self.keep.iter().any(|k| k.is_match(secret))
    }

    /// The placeholder of `secret` (given once per secret per run), and the replacement noted.
    fn placeholder(&mut self, kind: &str, secret: &[u8]) -> String {
        let p = match self.placeholders.get(secret) {
            Some(p) => p.clone(),
            None => {
                let n = self.numbers.entry(kind.to_owned()).or_insert(0);
                *n += 1;
                let p = format!("[REDACTED:{kind}:{n}]");
                self.placeholders.insert(secret.to_vec(), p.clone());
                p
            }
        };
        self.note(kind, &p);
        p
    }

    fn note(&mut self, kind: &str, placeholder: &str) {
        *self.counts.entry(kind.to_owned()).or_insert(0) += 1;
        if let Some(hits) = &mut self.hits {
            hits.push(Hit {
                place: self.place.clone(),
                kind: kind.to_owned(),
                placeholder: placeholder.to_owned(),
            });
        }
    }

    /// `text` with every secret the patterns find replaced; `None` when nothing was.
    pub fn patterns(&mut self, text: &[u8]) -> Option<Vec<u8>> {
        let mut out: Option<Vec<u8>> = None;
        let matched: Vec<usize> = match &self.set {
            Some(set) => set.matches(text).into_iter().collect(),
            None => (0..self.detectors.len()).collect(),
        };
        for i in matched {
            let current = out.as_deref().unwrap_or(text);
            if let Some(next) = self.apply(i, current) {
                out = Some(next);
            }
        }
        if !self.home.is_empty() {
            for h in 0..self.home.len() {
                let current = out.as_deref().unwrap_or(text);
                if let Some(next) = self.apply_home(h, current) {
                    out = Some(next);
                }
            }
        }
        out
    }

    /// Detector `i` applied to `text`.
    fn apply(&mut self, i: usize, text: &[u8]) -> Option<Vec<u8>> {
        let mut spans = Vec::new();
        {
            let re = &self.detectors[i].regex;
            for c in re.captures_iter(text) {
                if let Some(m) = c.name("s").or_else(|| c.get(0))
                    && !self.kept(m.as_bytes())
                {
                    spans.push((m.start(), m.end()));
                }
            }
        }
        if spans.is_empty() {
            return None;
        }
        let kind = self.detectors[i].kind.clone();
        let mut out = Vec::with_capacity(text.len());
        let mut last = 0;
        for (s, e) in spans {
            out.extend_from_slice(&text[last..s]);
            let p = self.placeholder(&kind, &text[s..e]);
            out.extend_from_slice(p.as_bytes());
            // A secret over several lines leaves its line ends, so no line moves.
            let ends = memchr::memchr_iter(b'\n', &text[s..e]).count();
            out.resize(out.len() + ends, b'\n');
            last = e;
        }
        out.extend_from_slice(&text[last..]);
        Some(out)
    }

    /// Home folder pattern `h` applied: the folder becomes `~`.
    fn apply_home(&mut self, h: usize, text: &[u8]) -> Option<Vec<u8>> {
        let mut spans = Vec::new();
        for m in self.home[h].find_iter(text) {
            // The `$HOME` pattern takes the byte after the folder too, to end on a boundary.
            let mut end = m.end();
            let folder = m.as_bytes();
            if h + 1 < self.home.len()
                && folder
                    .last()
                    .is_some_and(|b| !(b.is_ascii_alphanumeric() || b"._-".contains(b)))
            {
                end -= 1;
            }
            if !self.kept(&text[m.start()..end]) {
                spans.push((m.start(), end));
            }
        }
        if spans.is_empty() {
            return None;
        }
        let mut out = Vec::with_capacity(text.len());
        let mut last = 0;
        for (s, e) in spans {
            out.extend_from_slice(&text[last..s]);
            out.push(b'~');
            self.note("home-path", "~");
            last = e;
        }
        out.extend_from_slice(&text[last..]);
        Some(out)
    }

    /// A whole value found at a secret position (`kind` from the position): replaced whole,
    /// but an authorization scheme (`Bearer `, `Basic `) stays, and a value a pattern knows
    /// takes the pattern's kind.
    pub fn whole(&mut self, position: &str, value: &str) -> Option<String> {
        let (scheme, secret) = split_scheme(value);
        if secret.is_empty() || self.kept(secret.as_bytes()) {
            return None;
        }
        let kind = self
            .detectors
            .iter()
            .find(|d| {
                d.regex
                    .find(secret.as_bytes())
                    .is_some_and(|m| m.start() == 0 && m.end() == secret.len())
            })
            .map(|d| d.kind.clone())
            .unwrap_or_else(|| position.to_owned());
        let p = self.placeholder(&kind, secret.as_bytes());
        Some(format!("{scheme}{p}"))
    }
}

/// `Bearer abc` → (`Bearer `, `abc`); a value without a scheme is all secret.
fn split_scheme(value: &str) -> (&str, &str) {
    for scheme in ["Bearer ", "bearer ", "Basic ", "basic ", "token ", "Token "] {
        if let Some(rest) = value.strip_prefix(scheme) {
            return (&value[..scheme.len()], rest);
        }
    }
    ("", value)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn redactor() -> Redactor {
        Redactor::new(&Options {
            home: true,
            ..Options::default()
        })
        .unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn the_same_secret_gets_the_same_placeholder() {
        let mut r = redactor();
        let a = r
            .patterns(b"key sk-ant-api03-AAAAAAAAAAAAAAAAAAAAAAAA and sk-ant-api03-BBBBBBBBBBBBBBBBBBBBBBBBB, sk-ant-api03-AAAAAAAAAAAAAAAAAAAAAAAA")
            .unwrap_or_default();
        assert_eq!(
            String::from_utf8_lossy(&a),
            "key [REDACTED:anthropic-key:1] and [REDACTED:anthropic-key:2], [REDACTED:anthropic-key:1]"
        );
        assert_eq!(r.counts().get("anthropic-key"), Some(&3));
        assert_eq!(r.distinct(), 2);
    }

    #[test]
    fn keep_leaves_a_match_alone_and_placeholders_stay() {
        let mut r = Redactor::new(&Options {
            keep: vec![r"@example\.com$".to_owned()],
            ..Options::default()
        })
        .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(r.patterns(b"bob@example.com"), None);
        assert!(r.patterns(b"bob@corp.io").is_some());
        assert_eq!(r.patterns(b"[REDACTED:email:1]"), None);
    }

    #[test]
    fn home_folders_become_a_tilde() {
        let mut r = redactor();
        let out = r
            .patterns(b"cd /home/alice/project && ls /Users/bob")
            .unwrap_or_default();
        assert_eq!(String::from_utf8_lossy(&out), "cd ~/project && ls ~");
    }

    #[test]
    fn a_bearer_scheme_stays() {
        let mut r = redactor();
        assert_eq!(
            r.whole("authorization", "Bearer abc.def").as_deref(),
            Some("Bearer [REDACTED:authorization:1]")
        );
        assert_eq!(
            r.whole("api-key", "sk-ant-api03-AAAAAAAAAAAAAAAAAAAAAAAA")
                .as_deref(),
            Some("[REDACTED:anthropic-key:1]")
        );
    }

    #[test]
    fn a_bad_pattern_is_refused_without_panic() {
        let err = Redactor::new(&Options {
            patterns: vec!["(".to_owned()],
            ..Options::default()
        });
        assert!(err.is_err());
    }
}
