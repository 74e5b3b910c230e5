//! What a secret looks like: the well-known patterns (provider keys, tokens, private keys,
//! passwords in URLs, e-mail addresses, home folders) and the positions whose value is a secret
//! whatever it looks like (an `authorization` header, an `apiKey` member, an `env` map).

use regex::bytes::{Regex, RegexSet};

/// A pattern and the kind of secret it finds. When the pattern has a group named `s`, only that
/// group is the secret (the words around it stay).
pub struct Detector {
    pub kind: String,
    pub regex: Regex,
}

/// The built-in patterns, in the order they are applied: the more specific first, so that an
/// Anthropic key is not taken for an OpenAI one.
const BUILT_IN: &[(&str, &str)] = &[
    (
        "private-key",
        r"-----BEGIN[A-Z0-9 ]{0,40}PRIVATE KEY( BLOCK)?-----[\s\S]*?-----END[A-Z0-9 ]{0,40}PRIVATE KEY( BLOCK)?-----",
    ),
    ("anthropic-key", r"\bsk-ant-[A-Za-z0-9_-]{16,}"),
    ("openrouter-key", r"\bsk-or-v1-[A-Za-z0-9_-]{16,}"),
    (
        "openai-key",
        r"\bsk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]*[A-Za-z0-9]{20,}[A-Za-z0-9_-]*",
    ),
    ("google-key", r"\bAIza[0-9A-Za-z_-]{35}"),
    ("groq-key", r"\bgsk_[A-Za-z0-9]{32,}"),
    ("xai-key", r"\bxai-[A-Za-z0-9]{32,}"),
    ("huggingface-token", r"\bhf_[A-Za-z0-9]{30,}"),
    ("stripe-key", r"\b[rs]k_live_[A-Za-z0-9]{16,}"),
    ("npm-token", r"\bnpm_[A-Za-z0-9]{36}"),
    ("github-token", r"\bgh[pousr]_[A-Za-z0-9]{30,}"),
    ("github-token", r"\bgithub_pat_[A-Za-z0-9_]{22,}"),
    ("gitlab-token", r"\bglpat-[A-Za-z0-9_-]{20,}"),
    ("slack-token", r"\bxox[abposr]-[A-Za-z0-9-]{10,}"),
    // A secret key written beside its access key (before the access key is replaced).
    (
        "aws-secret-key",
        r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b[^\n]{0,80}?(?:[^A-Za-z0-9/+]|^)(?P<s>[A-Za-z0-9/+]{40})(?:[^A-Za-z0-9/+=]|$)",
    ),
    ("aws-access-key", r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"),
    (
        "aws-secret-key",
        r#"(?i)aws.{0,24}?(?:secret|sk)[A-Za-z_ ]{0,20}["']?\s*[:=]\s*["']?(?P<s>[A-Za-z0-9/+]{40})(?:[^A-Za-z0-9/+=]|$)"#,
    ),
    (
        "jwt",
        r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}",
    ),
    (
        "bearer-token",
        r"(?i)\bbearer\s+(?P<s>[A-Za-z0-9._~+/=-]*[A-Za-z0-9][A-Za-z0-9._~+/=-]{7,})",
    ),
    // `password=…`, `api_key: …` in plain text (a log line, a shell command).
    (
        "assigned-secret",
        r#"(?i)(?:api[_-]?key|access[_-]?token|auth[_-]?token|secret[_-]?key|client[_-]?secret|password|passwd)["']?\s*[=:]\s*["']?(?P<s>[^\s"',;&\\\[\]{}]{4,})"#,
    ),
    (
        "url-password",
        r"(?i)\b[a-z][a-z0-9+.-]{1,20}://[^/\s:@\x22'\\]{1,128}:(?P<s>[^/\s@\x22'\\]{1,256})@",
    ),
    (
        "email",
        r"\b[A-Za-z0-9._%+-]{1,64}@[A-Za-z0-9-]{1,63}(?:\.[A-Za-z0-9-]{1,63})*\.[A-Za-z]{2,24}\b",
    ),
];

/// The pattern of a home folder: `/home/NAME`, `/Users/NAME`, `C:\Users\NAME` (the user's name
/// is the secret; the whole prefix becomes `~`).
pub const HOME: &str = r"(?:/home/|/Users/|[A-Za-z]:\\{1,2}Users\\{1,2})[A-Za-z0-9._-]+";

/// The kind of the values of a member named `key`, when the position alone makes it a secret.
pub fn kind_of_key(key: &str) -> Option<&'static str> {
    let k: String = key
        .chars()
        .filter(|c| *c != '_' && *c != '-')
        .flat_map(char::to_lowercase)
        .collect();
    Some(match k.as_str() {
        "authorization" | "proxyauthorization" => "authorization",
        "cookie" | "setcookie" => "cookie",
        k if k.contains("apikey") || k == "xgoogapikey" => "api-key",
        k if k.contains("password") || k.contains("passwd") => "password",
        k if k.contains("privatekey") => "private-key",
        k if k.contains("secret") => "secret",
        k if k.ends_with("token") && !k.ends_with("maxtoken") => "token",
        "xauthtoken" | "auth" => "token",
        _ => return None,
    })
}

/// Whether the values of member `key` are ids or times a rule may depend on: they are never
/// rewritten.
pub fn is_kept_key(key: &str) -> bool {
    matches!(
        key,
        "id" | "uuid"
            | "type"
            | "role"
            | "timestamp"
            | "time"
            | "created"
            | "updated"
            | "created_at"
            | "updated_at"
            | "createdAt"
            | "updatedAt"
            | "version"
            | "ordinal"
    ) || key.ends_with("Id")
        || key.ends_with("ID")
        || key.ends_with("_id")
        || key.ends_with("Uuid")
        || key.ends_with("_uuid")
}

/// Whether the members of an object under `key` are all secrets (an environment).
pub fn is_env_key(key: &str) -> bool {
    matches!(
        key.to_ascii_lowercase().as_str(),
        "env" | "environment" | "envvars" | "env_vars"
    )
}

/// The built-in detectors.
pub fn built_in() -> Vec<Detector> {
    BUILT_IN
        .iter()
        .filter_map(|(kind, re)| {
            Regex::new(re).ok().map(|regex| Detector {
                kind: (*kind).to_owned(),
                regex,
            })
        })
        .collect()
}

/// A set matching whatever any of `detectors` matches, to skip text none of them matches.
pub fn set_of(detectors: &[Detector]) -> Option<RegexSet> {
    RegexSet::new(detectors.iter().map(|d| d.regex.as_str())).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kind(text: &str) -> Option<String> {
        built_in()
            .into_iter()
            .find(|d| d.regex.is_match(text.as_bytes()))
            .map(|d| d.kind)
    }

    #[test]
    fn every_built_in_pattern_compiles() {
        assert_eq!(built_in().len(), BUILT_IN.len());
        assert!(Regex::new(HOME).is_ok());
    }

    #[test]
    fn well_known_secrets_are_found_by_their_kind() {
        let cases = [
            (
                "sk-ant-api03-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789",
                "anthropic-key",
            ),
            ("sk-proj-AbCdEfGhIjKlMnOpQrStUvWxYz0123", "openai-key"),
            ("AIzaSyA1234567890abcdefghijklmnopqrstuv", "google-key"),
            ("ghp_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789", "github-token"),
            ("github_pat_11ABCDEFG0123456789_abcdefghij", "github-token"),
            ("glpat-AbCdEfGhIjKlMnOpQrSt", "gitlab-token"),
            ("xoxb-1234567890-abcdefghij", "slack-token"),
            ("AKIAIOSFODNN7EXAMPLE", "aws-access-key"),
            (
                "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
                "aws-secret-key",
            ),
            (
                "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N",
                "jwt",
            ),
            ("Authorization: Bearer abcdef0123456789", "bearer-token"),
            ("postgres://admin:hunter2@db.example.com/x", "url-password"),
            ("mail alice.smith@example.com now", "email"),
            (
                "AKIAIOSFODNN7EXAMPLE wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
                "aws-secret-key",
            ),
            ("run --password=hunter22 now", "assigned-secret"),
            ("export OPENAI_API_KEY=abc123def", "assigned-secret"),
            (
                "-----BEGIN RSA PRIVATE KEY-----\nMIIE\n-----END RSA PRIVATE KEY-----",
                "private-key",
            ),
        ];
        for (text, want) in cases {
            assert_eq!(kind(text).as_deref(), Some(want), "{text}");
        }
    }

    #[test]
    fn ordinary_text_is_not_a_secret() {
        for text in [
            "toolu_01AbCdEfGhIjKlMnOpQrStUv",
            "call_abc123",
            "msg_01ABCDEF",
            "the bearer of bad news",
            "https://example.com/path",
            "ses_3c1f0e2a9ffeB4nM5qW6eR7tY8",
            "@scope/package",
            "max_tokens=4096",
            "the password is wrong",
        ] {
            assert_eq!(kind(text), None, "{text}");
        }
    }

    #[test]
    fn positions_name_their_kind() {
        assert_eq!(kind_of_key("Authorization"), Some("authorization"));
        assert_eq!(kind_of_key("x-api-key"), Some("api-key"));
        assert_eq!(kind_of_key("apiKey"), Some("api-key"));
        assert_eq!(kind_of_key("refresh_token"), Some("token"));
        assert_eq!(kind_of_key("max_tokens"), None);
        assert_eq!(kind_of_key("input_tokens"), None);
        assert_eq!(kind_of_key("text"), None);
        assert!(is_kept_key("sessionID") && is_kept_key("tool_use_id"));
        assert!(!is_kept_key("text"));
    }
}
