//! Decoding logged `ZodError`s into plain words.
//!
//! When an agent validates its own writes (`Session.updatePart = fn(schema, …)`), a bad write
//! throws a `ZodError` whose message is the JSON array of issues. That tree is hard to read: a
//! union of three alternatives, one of which failed on a discriminator deep inside, the other two
//! on missing fields because they do not apply at all. [`decode`] turns it into a headline and a
//! few lines that say which alternative was meant, what failed there and what is allowed — using
//! the schemas in [`super::schema`] to name allowed values Zod v4 leaves out.

use serde_json::Value;

use super::schema::{ASSISTANT_ERROR, MESSAGE, PART, TOOL_STATE, Union};

/// A decoded ZodError.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Decoded {
    /// One sentence: what was wrong.
    pub headline: String,
    /// The issue tree in words, one line each (indented for nested alternatives).
    pub details: Vec<String>,
    /// The deepest discriminator that matched no variant, if that is what failed.
    pub discriminator: Option<Discriminator>,
    /// Paths of the leaf issues, e.g. `state.status`, `summary.diffs[1].additions`.
    pub paths: Vec<String>,
}

/// A discriminated union that matched no variant.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Discriminator {
    pub path: String,
    pub tag: String,
    /// What the union is (`tool state`), when rewind knows the schema.
    pub what: Option<&'static str>,
    pub allowed: Vec<String>,
}

/// Finds the issues array in an error message: `[…]`, `ZodError: […]`, or text ending in one.
pub fn parse_issues(text: &str) -> Option<Vec<Value>> {
    let start = text.find('[')?;
    let body = &text[start..];
    let end = body.rfind(']')?;
    let Ok(Value::Array(items)) = serde_json::from_str::<Value>(&body[..=end]) else {
        return None;
    };
    let looks_like_zod = items
        .first()
        .is_some_and(|i| i.get("code").is_some() && i.get("path").is_some());
    looks_like_zod.then_some(items)
}

/// Decodes a list of Zod issues (v4 shape, with the v3 shape accepted too).
pub fn decode(issues: &[Value]) -> Decoded {
    let mut details = Vec::new();
    let mut discriminator = None;
    let mut paths = Vec::new();
    walk(issues, &[], 0, &mut details, &mut discriminator, &mut paths);
    let headline = match &discriminator {
        Some(d) => match d.what {
            Some(what) => format!(
                "a {what} was written with a `{}` outside {}",
                d.tag,
                d.allowed.join(" | ")
            ),
            None => format!("`{}` matched none of the allowed variants", d.path),
        },
        None => {
            let leaves: Vec<String> = issues.iter().filter_map(|i| leaf_words(i, &[])).collect();
            if leaves.is_empty() {
                "the value did not match the schema".into()
            } else {
                leaves.join("; ")
            }
        }
    };
    Decoded {
        headline,
        details,
        discriminator,
        paths,
    }
}

fn path_of(issue: &Value, base: &[String]) -> Vec<String> {
    let mut out = base.to_vec();
    if let Some(items) = issue.get("path").and_then(Value::as_array) {
        for seg in items {
            match seg {
                Value::Number(n) => out.push(format!("[{n}]")),
                Value::String(s) => out.push(s.clone()),
                other => out.push(other.to_string()),
            }
        }
    }
    out
}

fn show_path(segs: &[String]) -> String {
    let mut s = String::new();
    for seg in segs {
        if seg.starts_with('[') {
            s.push_str(seg);
        } else {
            if !s.is_empty() {
                s.push('.');
            }
            s.push_str(seg);
        }
    }
    if s.is_empty() { "(root)".into() } else { s }
}

/// The union rewind knows for a discriminator at a path.
fn known_union(tag: &str, path: &[String]) -> Option<&'static Union> {
    let parent = path.len().checked_sub(2).and_then(|i| path.get(i));
    match (tag, parent.map(String::as_str)) {
        ("status", Some("state")) => Some(&TOOL_STATE),
        ("type", _) => Some(&PART),
        ("role", _) => Some(&MESSAGE),
        ("name", Some("error")) => Some(&ASSISTANT_ERROR),
        _ => None,
    }
}

/// Words for a single non-union issue.
fn leaf_words(issue: &Value, base: &[String]) -> Option<String> {
    let code = issue.get("code").and_then(Value::as_str)?;
    let path = show_path(&path_of(issue, base));
    let s = |k: &str| issue.get(k).and_then(Value::as_str);
    Some(match code {
        "invalid_type" => {
            let expected = s("expected").unwrap_or("another type");
            let received = s("received").map(str::to_owned).or_else(|| {
                s("message")
                    .and_then(|m| m.rsplit_once("received "))
                    .map(|(_, r)| r.to_owned())
            });
            match received {
                Some(r) => format!("`{path}`: expected {expected}, received {r}"),
                None => format!("`{path}`: expected {expected}"),
            }
        }
        "invalid_value" | "invalid_enum_value" | "invalid_literal" => {
            let values = issue
                .get("values")
                .or_else(|| issue.get("options"))
                .and_then(Value::as_array)
                .map(|v| {
                    v.iter()
                        .map(|x| x.as_str().map_or_else(|| x.to_string(), str::to_owned))
                        .collect::<Vec<_>>()
                        .join(" | ")
                });
            match values {
                Some(v) => format!("`{path}`: must be one of {v}"),
                None => format!("`{path}`: {}", s("message").unwrap_or("invalid value")),
            }
        }
        _ => format!("`{path}`: {}", s("message").unwrap_or(code)),
    })
}

/// Whether every issue of a union alternative is a missing top-level field: the value does not
/// have that shape at all, so the alternative does not apply.
fn not_applicable(issues: &[Value]) -> Option<Vec<String>> {
    let mut fields = Vec::new();
    for issue in issues {
        let missing = issue.get("code").and_then(Value::as_str) == Some("invalid_type")
            && (issue.get("received").and_then(Value::as_str) == Some("undefined")
                || issue
                    .get("message")
                    .and_then(Value::as_str)
                    .is_some_and(|m| m.ends_with("received undefined")));
        let path = issue.get("path").and_then(Value::as_array)?;
        if !missing || path.len() != 1 {
            return None;
        }
        fields.push(path[0].as_str().unwrap_or_default().to_owned());
    }
    (!fields.is_empty()).then_some(fields)
}

/// Alternatives of a union issue (v4 `errors: [[…]…]`, v3 `unionErrors: [{issues}]`).
fn branches(issue: &Value) -> Vec<Vec<Value>> {
    if let Some(errs) = issue.get("errors").and_then(Value::as_array) {
        return errs.iter().filter_map(|b| b.as_array().cloned()).collect();
    }
    if let Some(errs) = issue.get("unionErrors").and_then(Value::as_array) {
        return errs
            .iter()
            .filter_map(|b| b.get("issues").and_then(Value::as_array).cloned())
            .collect();
    }
    Vec::new()
}

fn walk(
    issues: &[Value],
    base: &[String],
    indent: usize,
    out: &mut Vec<String>,
    disc: &mut Option<Discriminator>,
    paths: &mut Vec<String>,
) {
    let pad = "  ".repeat(indent);
    for issue in issues {
        let code = issue.get("code").and_then(Value::as_str).unwrap_or("");
        let path = path_of(issue, base);
        let tag = issue.get("discriminator").and_then(Value::as_str);
        let is_disc_failure = code == "invalid_union_discriminator"
            || (code == "invalid_union"
                && (tag.is_some()
                    || issue.get("note").and_then(Value::as_str)
                        == Some("No matching discriminator")));
        if is_disc_failure {
            let tag = tag
                .map(str::to_owned)
                .or_else(|| path.last().cloned())
                .unwrap_or_default();
            let known = known_union(&tag, &path);
            let allowed: Vec<String> = match issue.get("options").and_then(Value::as_array) {
                Some(opts) => opts
                    .iter()
                    .map(|o| o.as_str().map_or_else(|| o.to_string(), str::to_owned))
                    .collect(),
                None => known
                    .map(|u| u.allowed().into_iter().map(str::to_owned).collect())
                    .unwrap_or_default(),
            };
            let shown = show_path(&path);
            let allowed_words = if allowed.is_empty() {
                String::new()
            } else {
                format!(" (allowed: {})", allowed.join(" | "))
            };
            out.push(format!(
                "{pad}at `{shown}`: the discriminator `{tag}` matched no variant{allowed_words}"
            ));
            paths.push(shown.clone());
            *disc = Some(Discriminator {
                path: shown,
                tag,
                what: known.map(|u| u.what),
                allowed,
            });
            continue;
        }
        if code == "invalid_union" {
            let alts = branches(issue);
            out.push(format!(
                "{pad}at `{}`: the value matched none of {} alternatives:",
                show_path(&path),
                alts.len()
            ));
            let mut seen: Vec<(Vec<String>, usize)> = Vec::new();
            for (i, alt) in alts.iter().enumerate() {
                let n = i + 1;
                if let Some(fields) = not_applicable(alt) {
                    if let Some((_, first)) = seen.iter().find(|(f, _)| *f == fields) {
                        out.push(format!(
                            "{pad}  {n}. not applicable (same shape as {first})"
                        ));
                    } else {
                        let names: Vec<String> = fields.iter().map(|f| format!("`{f}`")).collect();
                        out.push(format!(
                            "{pad}  {n}. a `{{{}}}` shape: not applicable ({} absent)",
                            fields.join(", "),
                            names.join(" and ")
                        ));
                        seen.push((fields, n));
                    }
                    continue;
                }
                let what = describe_alternative(alt, &path);
                out.push(format!("{pad}  {n}. {what}:"));
                walk(alt, &path, indent + 2, out, disc, paths);
            }
            continue;
        }
        if let Some(words) = leaf_words(issue, base) {
            out.push(format!("{pad}{words}"));
            paths.push(show_path(&path));
        }
    }
}

/// Names a union alternative from what its issues touch.
fn describe_alternative(alt: &[Value], base: &[String]) -> &'static str {
    let deep = alt.iter().any(|i| {
        let p = path_of(i, base);
        p.len() >= 2 && p[p.len() - 2] == "state" && p[p.len() - 1] == "status"
    });
    if deep {
        "the part itself (a tool part)"
    } else {
        "this alternative"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The ZodError of link-assistant/agent#149 (tool status `failed`).
    const ISSUE_149: &str = r#"[
  {
    "code": "invalid_union",
    "errors": [
      [
        {
          "code": "invalid_union",
          "errors": [],
          "note": "No matching discriminator",
          "discriminator": "status",
          "path": ["state", "status"],
          "message": "Invalid input"
        }
      ],
      [
        {"expected": "object", "code": "invalid_type", "path": ["part"], "message": "Invalid input: expected object, received undefined"},
        {"expected": "string", "code": "invalid_type", "path": ["delta"], "message": "Invalid input: expected string, received undefined"}
      ],
      [
        {"expected": "object", "code": "invalid_type", "path": ["part"], "message": "Invalid input: expected object, received undefined"},
        {"expected": "string", "code": "invalid_type", "path": ["delta"], "message": "Invalid input: expected string, received undefined"}
      ]
    ],
    "path": [],
    "message": "Invalid input"
  }
]"#;

    #[test]
    fn decodes_the_failed_status_union() {
        let issues = parse_issues(ISSUE_149).unwrap_or_default();
        let d = decode(&issues);
        assert_eq!(
            d.headline,
            "a tool state was written with a `status` outside pending | running | completed | error"
        );
        assert_eq!(
            d.details,
            [
                "at `(root)`: the value matched none of 3 alternatives:",
                "  1. the part itself (a tool part):",
                "    at `state.status`: the discriminator `status` matched no variant (allowed: pending | running | completed | error)",
                "  2. a `{part, delta}` shape: not applicable (`part` and `delta` absent)",
                "  3. not applicable (same shape as 2)",
            ]
        );
        assert_eq!(d.paths, ["state.status"]);
    }

    #[test]
    fn decodes_nan_numbers() {
        let text = "ZodError: [\n {\"expected\":\"number\",\"code\":\"invalid_type\",\"received\":\"NaN\",\"path\":[\"summary\",\"diffs\",1,\"additions\"],\"message\":\"Invalid input: expected number, received NaN\"}]";
        let d = decode(&parse_issues(text).unwrap_or_default());
        assert_eq!(
            d.headline,
            "`summary.diffs[1].additions`: expected number, received NaN"
        );
        assert_eq!(d.discriminator, None);
    }

    #[test]
    fn not_zod_is_none() {
        assert_eq!(parse_issues("The operation timed out."), None);
        assert_eq!(parse_issues("[1, 2]"), None);
    }
}
