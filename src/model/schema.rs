//! Strict validation of payloads against the schemas the agents enforce with Zod.
//!
//! Schemas are written as data ([`Ty`]) and checked by one small validator that reports every
//! problem with its path, what was received and what is allowed — the words a `schema-violation`
//! finding needs. Unknown keys are accepted, as Zod strips them rather than rejecting them.
//!
//! The message-v2 schemas follow `message-v2.ts` of OpenCode and link-assistant/agent (see
//! `opencode-storage.md` §2 and `agent-log-format.md` §3). Where the two differ, the rule here is
//! the one both accept (e.g. `compaction.auto` is optional), so neither dialect gets false alarms.

use std::fmt;

use serde_json::Value;

/// A type in a schema.
#[derive(Clone, Copy, Debug)]
pub enum Ty {
    Str,
    Num,
    #[allow(
        dead_code,
        reason = "part of the schema language; message-v2 has no integer-only field today"
    )]
    Int,
    Bool,
    Any,
    /// `T | null`
    Nullable(&'static Ty),
    /// `Record<string, T>`
    Record(&'static Ty),
    Array(&'static Ty),
    Obj(&'static [Field]),
    Union(&'static Union),
}

/// A field of an object type.
#[derive(Clone, Copy, Debug)]
pub struct Field {
    pub name: &'static str,
    pub ty: Ty,
    pub required: bool,
}

/// A discriminated union: the value of `tag` picks the variant.
#[derive(Debug)]
pub struct Union {
    /// What the union is, in words ("tool state", "part").
    pub what: &'static str,
    pub tag: &'static str,
    pub variants: &'static [(&'static str, &'static [Field])],
}

impl Union {
    pub fn allowed(&self) -> Vec<&'static str> {
        self.variants.iter().map(|(name, _)| *name).collect()
    }
}

pub const fn req(name: &'static str, ty: Ty) -> Field {
    Field {
        name,
        ty,
        required: true,
    }
}

pub const fn opt(name: &'static str, ty: Ty) -> Field {
    Field {
        name,
        ty,
        required: false,
    }
}

const STR: Ty = Ty::Str;
const NUM: Ty = Ty::Num;
const BOOL: Ty = Ty::Bool;
const ANY: Ty = Ty::Any;
const RECORD: Ty = Ty::Record(&Ty::Any);
const TIME_START: Ty = Ty::Obj(&[req("start", NUM)]);
const TIME_START_END: Ty = Ty::Obj(&[req("start", NUM), req("end", NUM), opt("compacted", NUM)]);
const TIME_OPEN: Ty = Ty::Obj(&[req("start", NUM), opt("end", NUM)]);
const TOKENS: Ty = Ty::Obj(&[
    opt("total", NUM),
    req("input", NUM),
    req("output", NUM),
    req("reasoning", NUM),
    req("cache", Ty::Obj(&[req("read", NUM), req("write", NUM)])),
]);

/// `ToolState`, discriminated on `status`.
pub static TOOL_STATE: Union = Union {
    what: "tool state",
    tag: "status",
    variants: &[
        ("pending", &[req("input", RECORD), req("raw", STR)]),
        (
            "running",
            &[
                req("input", RECORD),
                opt("title", STR),
                opt("metadata", RECORD),
                req("time", TIME_START),
            ],
        ),
        (
            "completed",
            &[
                req("input", RECORD),
                req("output", STR),
                req("title", STR),
                req("metadata", RECORD),
                req("time", TIME_START_END),
                opt("attachments", Ty::Array(&ANY)),
            ],
        ),
        (
            "error",
            &[
                req("input", RECORD),
                req("error", STR),
                opt("metadata", RECORD),
                req("time", TIME_START_END),
            ],
        ),
    ],
};

/// `MessageV2.Part`, discriminated on `type` (the 12 part types).
pub static PART: Union = Union {
    what: "part",
    tag: "type",
    variants: &[
        (
            "text",
            &[
                req("text", STR),
                opt("synthetic", BOOL),
                opt("ignored", BOOL),
                opt("time", TIME_OPEN),
                opt("metadata", RECORD),
            ],
        ),
        (
            "subtask",
            &[
                req("prompt", STR),
                req("description", STR),
                req("agent", STR),
                opt("command", STR),
            ],
        ),
        (
            "reasoning",
            &[
                req("text", STR),
                opt("metadata", RECORD),
                req("time", TIME_OPEN),
            ],
        ),
        (
            "file",
            &[req("mime", STR), opt("filename", STR), req("url", STR)],
        ),
        (
            "tool",
            &[
                req("callID", STR),
                req("tool", STR),
                req("state", Ty::Union(&TOOL_STATE)),
                opt("metadata", RECORD),
            ],
        ),
        ("step-start", &[opt("snapshot", STR)]),
        (
            "step-finish",
            &[
                req("reason", STR),
                opt("snapshot", STR),
                req("cost", NUM),
                req("tokens", TOKENS),
            ],
        ),
        ("snapshot", &[req("snapshot", STR)]),
        ("patch", &[req("hash", STR), req("files", Ty::Array(&STR))]),
        ("agent", &[req("name", STR)]),
        (
            "retry",
            &[
                req("attempt", NUM),
                req("error", Ty::Obj(&[req("name", STR), req("data", RECORD)])),
                req("time", Ty::Obj(&[req("created", NUM)])),
            ],
        ),
        (
            "compaction",
            &[
                opt("auto", BOOL),
                opt("overflow", BOOL),
                opt("tail_start_id", STR),
            ],
        ),
    ],
};

/// The assistant message's `error`, discriminated on `name`.
pub static ASSISTANT_ERROR: Union = Union {
    what: "assistant error",
    tag: "name",
    variants: &[
        ("ProviderAuthError", &[req("data", RECORD)]),
        ("UnknownError", &[req("data", RECORD)]),
        ("MessageOutputLengthError", &[req("data", RECORD)]),
        ("MessageAbortedError", &[req("data", RECORD)]),
        ("StructuredOutputError", &[req("data", RECORD)]),
        ("ContextOverflowError", &[req("data", RECORD)]),
        ("APIError", &[req("data", RECORD)]),
    ],
};

/// `MessageV2.Info`, discriminated on `role`.
pub static MESSAGE: Union = Union {
    what: "message",
    tag: "role",
    variants: &[
        (
            "user",
            &[
                req("time", Ty::Obj(&[req("created", NUM)])),
                req("agent", STR),
                req(
                    "model",
                    Ty::Obj(&[req("providerID", STR), req("modelID", STR)]),
                ),
                opt("system", STR),
                opt("tools", Ty::Record(&BOOL)),
            ],
        ),
        (
            "assistant",
            &[
                req(
                    "time",
                    Ty::Obj(&[req("created", NUM), opt("completed", NUM)]),
                ),
                opt("error", Ty::Union(&ASSISTANT_ERROR)),
                req("parentID", STR),
                req("modelID", STR),
                req("providerID", STR),
                req("mode", STR),
                req("path", Ty::Obj(&[req("cwd", STR), req("root", STR)])),
                opt("summary", BOOL),
                req("cost", NUM),
                req("tokens", TOKENS),
                opt("finish", STR),
            ],
        ),
    ],
};

/// One step of a path into a value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PathSeg {
    Key(String),
    Index(usize),
}

/// A path, displayed like `state.status` or `diffs[1].additions`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Path(pub Vec<PathSeg>);

impl fmt::Display for Path {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0.is_empty() {
            return f.write_str("(root)");
        }
        for (i, seg) in self.0.iter().enumerate() {
            match seg {
                PathSeg::Key(k) if i == 0 => write!(f, "{k}")?,
                PathSeg::Key(k) => write!(f, ".{k}")?,
                PathSeg::Index(n) => write!(f, "[{n}]")?,
            }
        }
        Ok(())
    }
}

impl Path {
    pub fn keys(&self) -> impl Iterator<Item = crate::json::scan::Seg<'_>> {
        self.0.iter().map(|s| match s {
            PathSeg::Key(k) => crate::json::scan::Seg::Key(k),
            PathSeg::Index(i) => crate::json::scan::Seg::Index(*i),
        })
    }
}

/// One problem found in a payload.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SchemaIssue {
    pub path: Path,
    pub kind: IssueKind,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum IssueKind {
    /// A required field is absent.
    Missing { expected: &'static str },
    /// The value has the wrong JSON type.
    WrongType {
        expected: &'static str,
        received: String,
    },
    /// The discriminator has a value no variant accepts.
    UnknownVariant {
        what: &'static str,
        tag: &'static str,
        received: String,
        allowed: Vec<&'static str>,
    },
}

impl fmt::Display for SchemaIssue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.kind {
            IssueKind::Missing { expected } => {
                write!(f, "`{}` is missing (expected {expected})", self.path)
            }
            IssueKind::WrongType { expected, received } => {
                write!(f, "`{}` is {received}, expected {expected}", self.path)
            }
            IssueKind::UnknownVariant {
                what,
                received,
                allowed,
                ..
            } => write!(
                f,
                "`{}` is {received}, which is not a {what} the schema allows ({})",
                self.path,
                allowed.join(" | ")
            ),
        }
    }
}

fn expected_name(ty: &Ty) -> &'static str {
    match ty {
        Ty::Str => "a string",
        Ty::Num => "a number",
        Ty::Int => "an integer",
        Ty::Bool => "a boolean",
        Ty::Any => "a value",
        Ty::Nullable(inner) => expected_name(inner),
        Ty::Record(_) | Ty::Obj(_) | Ty::Union(_) => "an object",
        Ty::Array(_) => "an array",
    }
}

/// Describes a received value in words: `the number 123`, `a string ("abc")`, `null`.
pub fn describe(v: &Value) -> String {
    match v {
        Value::Null => "null".into(),
        Value::Bool(b) => format!("`{b}`"),
        Value::Number(n) => format!("the number {n}"),
        Value::String(s) => {
            let short: String = s.chars().take(40).collect();
            let ell = if short.len() < s.len() { "…" } else { "" };
            format!("the string {:?}", format!("{short}{ell}"))
        }
        Value::Array(_) => "an array".into(),
        Value::Object(_) => "an object".into(),
    }
}

/// Validates `v` against `ty`; an empty result means it conforms.
pub fn validate(v: &Value, ty: &Ty) -> Vec<SchemaIssue> {
    let mut out = Vec::new();
    check(v, ty, &mut Vec::new(), &mut out);
    out
}

/// Validates a part (ids are not required: DB rows store them in columns).
pub fn validate_part(v: &Value) -> Vec<SchemaIssue> {
    validate(v, &Ty::Union(&PART))
}

/// Validates message info.
pub fn validate_message(v: &Value) -> Vec<SchemaIssue> {
    validate(v, &Ty::Union(&MESSAGE))
}

/// A step of the path being walked, borrowed: it is only copied into a [`Path`] for an issue.
#[derive(Clone, Copy)]
enum Step<'a> {
    Key(&'a str),
    Index(usize),
}

fn owned(path: &[Step<'_>]) -> Path {
    Path(
        path.iter()
            .map(|s| match s {
                Step::Key(k) => PathSeg::Key((*k).to_owned()),
                Step::Index(i) => PathSeg::Index(*i),
            })
            .collect(),
    )
}

fn check<'v>(v: &'v Value, ty: &Ty, path: &mut Vec<Step<'v>>, out: &mut Vec<SchemaIssue>) {
    let wrong = |path: &Vec<Step<'v>>, out: &mut Vec<SchemaIssue>| {
        out.push(SchemaIssue {
            path: owned(path),
            kind: IssueKind::WrongType {
                expected: expected_name(ty),
                received: describe(v),
            },
        });
    };
    match ty {
        Ty::Any => {}
        Ty::Str => {
            if !v.is_string() {
                wrong(path, out);
            }
        }
        Ty::Num => {
            if !v.is_number() {
                wrong(path, out);
            }
        }
        Ty::Int => {
            if !(v.is_i64() || v.is_u64()) {
                wrong(path, out);
            }
        }
        Ty::Bool => {
            if !v.is_boolean() {
                wrong(path, out);
            }
        }
        Ty::Nullable(inner) => {
            if !v.is_null() {
                check(v, inner, path, out);
            }
        }
        Ty::Record(inner) => match v.as_object() {
            None => wrong(path, out),
            Some(map) => {
                for (k, item) in map {
                    path.push(Step::Key(k));
                    check(item, inner, path, out);
                    path.pop();
                }
            }
        },
        Ty::Array(inner) => match v.as_array() {
            None => wrong(path, out),
            Some(items) => {
                for (i, item) in items.iter().enumerate() {
                    path.push(Step::Index(i));
                    check(item, inner, path, out);
                    path.pop();
                }
            }
        },
        Ty::Obj(fields) => match v.as_object() {
            None => wrong(path, out),
            Some(_) => check_fields(v, fields, path, out),
        },
        Ty::Union(u) => {
            if !v.is_object() {
                wrong(path, out);
                return;
            }
            path.push(Step::Key(u.tag));
            match v.get(u.tag) {
                None => out.push(SchemaIssue {
                    path: owned(path),
                    kind: IssueKind::Missing {
                        expected: "one of the variant names",
                    },
                }),
                Some(tag) => {
                    let found = tag
                        .as_str()
                        .and_then(|t| u.variants.iter().find(|(name, _)| *name == t));
                    match found {
                        None => out.push(SchemaIssue {
                            path: owned(path),
                            kind: IssueKind::UnknownVariant {
                                what: u.what,
                                tag: u.tag,
                                received: describe(tag),
                                allowed: u.allowed(),
                            },
                        }),
                        Some((_, fields)) => {
                            path.pop();
                            check_fields(v, fields, path, out);
                            return;
                        }
                    }
                }
            }
            path.pop();
        }
    }
}

fn check_fields<'v>(
    v: &'v Value,
    fields: &[Field],
    path: &mut Vec<Step<'v>>,
    out: &mut Vec<SchemaIssue>,
) {
    for field in fields {
        path.push(Step::Key(field.name));
        match v.get(field.name) {
            None if field.required => out.push(SchemaIssue {
                path: owned(path),
                kind: IssueKind::Missing {
                    expected: expected_name(&field.ty),
                },
            }),
            None => {}
            Some(item) => check(item, &field.ty, path, out),
        }
        path.pop();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn messages(issues: &[SchemaIssue]) -> Vec<String> {
        issues.iter().map(ToString::to_string).collect()
    }

    #[test]
    fn failed_status_is_an_unknown_variant() {
        let issues = validate_part(&json!({
            "type": "tool", "callID": "c", "tool": "edit",
            "state": {"status": "failed", "input": {}, "error": "x", "time": {"start": 1, "end": 2}}
        }));
        assert_eq!(
            messages(&issues),
            [
                "`state.status` is the string \"failed\", which is not a tool state the schema allows (pending | running | completed | error)"
            ]
        );
    }

    #[test]
    fn missing_and_mistyped_fields() {
        let issues = validate_part(&json!({
            "type": "step-finish", "reason": "stop", "cost": "0.1", "tokens": {"input": 1}
        }));
        assert_eq!(
            messages(&issues),
            [
                "`cost` is the string \"0.1\", expected a number",
                "`tokens.output` is missing (expected a number)",
                "`tokens.reasoning` is missing (expected a number)",
                "`tokens.cache` is missing (expected an object)",
            ]
        );
    }

    #[test]
    fn valid_parts_pass_and_unknown_keys_are_ignored() {
        for part in [
            json!({"type": "step-start", "snapshot": "abc", "extra": 1}),
            json!({"type": "text", "text": "hi", "time": {"start": 1, "end": 2}}),
            json!({"type": "tool", "callID": "c", "tool": "bash",
                   "state": {"status": "pending", "input": {}, "raw": ""}}),
            json!({"type": "tool", "callID": "c", "tool": "bash",
                   "state": {"status": "completed", "input": {"a": 1}, "output": "o", "title": "t",
                             "metadata": {}, "time": {"start": 1, "end": 2}}}),
            json!({"type": "compaction"}),
        ] {
            assert_eq!(validate_part(&part), [], "{part}");
        }
    }

    #[test]
    fn unknown_part_type_lists_the_twelve() {
        let issues = validate_part(&json!({"type": "thinking"}));
        assert!(
            matches!(&issues[0].kind, IssueKind::UnknownVariant { allowed, .. } if allowed.len() == 12)
        );
    }

    #[test]
    fn paths_display_indices() {
        let p = Path(vec![
            PathSeg::Key("summary".into()),
            PathSeg::Key("diffs".into()),
            PathSeg::Index(1),
            PathSeg::Key("additions".into()),
        ]);
        assert_eq!(p.to_string(), "summary.diffs[1].additions");
        assert_eq!(Path::default().to_string(), "(root)");
    }
}
