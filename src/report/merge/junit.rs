//! Merging JUnit XML: each file's test case as its shard wrote it, in the run's order, then the
//! test cases of the errors, under one suite whose counts are counted again. The printer escapes
//! every `<` of the text it writes, so the elements are found by their tags alone.

use std::collections::HashSet;

use super::{Kind, MergeError, Merged, Report, merged_errors, plan};
use crate::report::Totals;
use crate::report::junit::{LEDGER_PROPERTY, SUITE_TAIL, failure, suite_head, system_out};

const CASE: &str = "    <testcase ";
const CASE_END: &str = "    </testcase>\n";
const FAILURE: &str = "      <failure ";

/// A JUnit report cut into its test cases.
struct Parsed<'a> {
    cases: Vec<&'a str>,
}

/// The text of XML character data or an attribute as the printer escaped it, unescaped.
fn unescape(s: &str) -> Option<String> {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(i) = rest.find('&') {
        out.push_str(&rest[..i]);
        let end = rest[i..].find(';')? + i;
        let entity = &rest[i + 1..end];
        match entity {
            "amp" => out.push('&'),
            "lt" => out.push('<'),
            "gt" => out.push('>'),
            "quot" => out.push('"'),
            "apos" => out.push('\''),
            _ => {
                let hex = entity.strip_prefix("#x")?;
                out.push(char::from_u32(u32::from_str_radix(hex, 16).ok()?)?);
            }
        }
        rest = &rest[end + 1..];
    }
    out.push_str(rest);
    Some(out)
}

/// Cuts `text` into its head, the ledger's JSON and the test cases.
fn parse<'a>(name: &str, text: &'a str) -> Result<(Parsed<'a>, serde_json::Value), MergeError> {
    let err = |message: &str| MergeError::Input {
        input: name.to_owned(),
        message: message.to_owned(),
    };
    let damaged = || err("not a `rewind check` JUnit report");
    // The printer writes every character a terminal would act on as a reference.
    if text
        .chars()
        .any(|c| !matches!(c, '\n' | '\t' | '\r') && crate::text::is_dangerous(c))
    {
        return Err(err(
            "holds a raw control or bidirectional character, which rewind never writes: it was edited",
        ));
    }
    // The declaration, `<testsuites …>`, `<testsuite …>`.
    let mut at = 0;
    for _ in 0..3 {
        at += text[at..].find('\n').ok_or_else(damaged)? + 1;
    }
    let rest = &text[at..];
    let open = "    <properties>\n";
    let close = "    </properties>\n";
    let Some(props) = rest.strip_prefix(open) else {
        return Err(super::no_ledger(name));
    };
    let end = props.find(close).ok_or_else(damaged)?;
    let property = format!("      <property name=\"{LEDGER_PROPERTY}\" value=\"");
    let value = props[..end]
        .strip_prefix(&property)
        .and_then(|v| v.strip_suffix("\"/>\n"))
        .ok_or_else(|| super::no_ledger(name))?;
    let json = unescape(value).ok_or_else(|| err("its shard ledger is damaged"))?;
    let ledger: serde_json::Value =
        serde_json::from_str(&json).map_err(|_| err("its shard ledger is damaged"))?;
    let mut rest = &props[end + close.len()..];
    let mut cases = Vec::new();
    while rest.starts_with(CASE) {
        let end = rest.find(CASE_END).ok_or_else(damaged)? + CASE_END.len();
        cases.push(&rest[..end]);
        rest = &rest[end..];
    }
    if rest != SUITE_TAIL {
        return Err(damaged());
    }
    Ok((Parsed { cases }, ledger))
}

/// A file's test case after the baseline, and whether it fails.
fn baselined(
    r: &Report<'_>,
    case: &str,
    lines: &[crate::report::ledger::Line],
    baseline: Option<&HashSet<String>>,
    totals: &mut Totals,
) -> Result<(String, bool), MergeError> {
    let failing = case.contains(FAILURE);
    let dropped =
        |l: &crate::report::ledger::Line| baseline.is_some_and(|b| b.contains(&l.fingerprint));
    if !lines.iter().any(dropped) {
        for l in lines {
            totals.count(l.severity);
        }
        return Ok((case.to_owned(), failing));
    }
    let edited = || r.err("its test cases differ from its ledger: it was edited");
    let head_end = case.find('\n').ok_or_else(edited)? + 1;
    let mut kept_totals = Totals::default();
    let mut kept_body = String::new();
    if failing {
        let start = case.find(FAILURE).ok_or_else(edited)?;
        let open = "type=\"rewind\">";
        let body_start = case[start..].find(open).ok_or_else(edited)? + start + open.len();
        let body_end = case.rfind("</failure>\n").ok_or_else(edited)?;
        let body = case.get(body_start..body_end).ok_or_else(edited)?;
        if lines.iter().map(|l| l.bytes).sum::<usize>() != body.len() {
            return Err(edited());
        }
        let mut at = 0;
        for l in lines {
            let piece = body.get(at..at + l.bytes).ok_or_else(edited)?;
            at += l.bytes;
            if !dropped(l) {
                kept_body.push_str(piece);
            }
        }
    }
    for l in lines.iter().filter(|l| !dropped(l)) {
        kept_totals.count(l.severity);
    }
    totals.merge(kept_totals);
    let fails = kept_totals.fails(r.ledger.fail_on);
    let mut out = case[..head_end].to_owned();
    if fails {
        out.push_str(&failure(&kept_totals, &kept_body));
    } else if kept_totals.total() > 0 {
        out.push_str(&system_out(&kept_totals));
    }
    out.push_str(CASE_END);
    Ok((out, fails))
}

pub(super) fn merge(
    inputs: &[(String, Vec<u8>)],
    baseline: Option<&HashSet<String>>,
) -> Result<Merged, MergeError> {
    let mut parsed = Vec::new();
    let mut ledgers = Vec::new();
    for (name, bytes) in inputs {
        let text = std::str::from_utf8(bytes).map_err(|_| MergeError::Input {
            input: name.clone(),
            message: "not a `rewind check` JUnit report (not UTF-8)".to_owned(),
        })?;
        let (p, ledger) = parse(name, text)?;
        ledgers.push((name.as_str(), super::ledger_of(name, ledger)?));
        parsed.push(p);
    }
    let (reports, steps) = plan(Kind::Junit, ledgers)?;
    // Each report's files: their test case and their findings' lines.
    let mut cases: Vec<crate::FastMap<&str, (usize, usize, usize)>> = Vec::new();
    for (r, p) in reports.iter().zip(&parsed) {
        let files = r.files();
        if p.cases.len() != files.len() + r.errors() || r.ledger.lines.len() != r.findings() {
            return Err(r.err("its test cases differ from its ledger: it was edited"));
        }
        let mut by_file = crate::FastMap::default();
        let mut line = 0;
        for (k, (file, n)) in files.into_iter().enumerate() {
            by_file.insert(file, (k, line, n));
            line += n;
        }
        cases.push(by_file);
    }
    let mut body = String::new();
    let mut totals = Totals::default();
    let (mut tests, mut failures) = (0, 0);
    let mut done: HashSet<&str> = HashSet::new();
    for step in &steps {
        let r = &reports[step.report];
        for unit in &r.ledger.entries[step.entry].units {
            if !done.insert(unit.file.as_str()) {
                continue;
            }
            let Some(&(k, line, n)) = cases[step.report].get(unit.file.as_str()) else {
                continue;
            };
            let (case, fails) = baselined(
                r,
                parsed[step.report].cases[k],
                &r.ledger.lines[line..line + n],
                baseline,
                &mut totals,
            )?;
            body.push_str(&case);
            tests += 1;
            failures += usize::from(fails);
        }
    }
    let errors = merged_errors(&reports, &steps, |k, i| {
        parsed[k].cases.get(cases[k].len() + i).copied()
    })?;
    let mut messages = Vec::new();
    for case in &errors {
        body.push_str(case);
        let attribute = |name: &str| {
            case.split_once(&format!("{name}=\""))
                .and_then(|(_, m)| m.split_once('"'))
                .and_then(|(m, _)| unescape(m))
                .unwrap_or_default()
        };
        messages.push((attribute("testcase name"), attribute("error message")));
    }
    let mut text = suite_head(tests + errors.len(), failures, errors.len());
    text.push_str(&body);
    text.push_str(SUITE_TAIL);
    Ok(Merged::of(text.into_bytes(), totals, messages, &reports))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unescapes_what_the_printer_escapes() {
        let text = "a<b>&\"c'\u{202e}é {\"k\": 1}";
        let escaped = crate::report::junit::xml_escape(text);
        assert_eq!(unescape(&escaped).as_deref(), Some(text));
        assert_eq!(unescape("&bogus;"), None);
        assert_eq!(unescape("a & b"), None);
    }
}
