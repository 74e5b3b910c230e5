//! The README's examples are real: every `$ rewind …` line of a ```` ```console ```` block is run
//! from the repository root at 80 columns (`COLUMNS=80`), and must exit with the status the README
//! gives it and print the output the README shows.
//!
//! * A block's expected exit status is written just before it as `<!-- exit: N -->`; without
//!   one it is 0. It applies to every command of the block.
//! * When a ```` ```text ```` block follows (blank lines between are allowed), its lines must
//!   appear in that order in the commands' output (stdout, then stderr), each as a whole line.
//!   A line that is exactly `…` marks a cut and matches nothing; trailing spaces are ignored.
//! * Lines of a console block that are not `$ rewind …` commands (`$ cargo test`) are not run.
//!   Commands that need what a fresh checkout does not have (a user's `~/.claude`, a store) go in
//!   ```` ```sh ```` blocks, which are not run.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use common::*;

/// One console block of the README.
struct Example {
    /// The README's line of the block's opening fence (1-based), for messages.
    line: usize,
    /// Each `rewind` command's arguments.
    commands: Vec<Vec<String>>,
    exit: i32,
    /// The lines of the text block after it, if any.
    shown: Option<Vec<String>>,
}

fn examples(readme: &str) -> Vec<Example> {
    let lines: Vec<&str> = readme.lines().collect();
    let mut out = Vec::new();
    let mut exit: Option<(usize, i32)> = None;
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i].trim_end();
        if let Some(rest) = line.strip_prefix("<!-- exit:") {
            let code = rest.trim_end_matches("-->").trim();
            let code = code
                .parse()
                .unwrap_or_else(|_| panic!("README.md:{}: bad exit comment {line:?}", i + 1));
            exit = Some((i + 1, code));
        } else if line == "```console" {
            let start = i + 1;
            let mut commands = Vec::new();
            i += 1;
            while i < lines.len() && lines[i].trim_end() != "```" {
                let cmd = lines[i].trim_end();
                let Some(cmd) = cmd.strip_prefix("$ ") else {
                    panic!(
                        "README.md:{}: a console block holds only `$ ` commands; show output in a text block after it",
                        i + 1
                    );
                };
                if let Some(args) = cmd.strip_prefix("rewind ") {
                    commands.push(split(args, i + 1));
                }
                i += 1;
            }
            let mut j = i + 1;
            while j < lines.len() && lines[j].trim().is_empty() {
                j += 1;
            }
            let shown = (j < lines.len() && lines[j].trim_end() == "```text").then(|| {
                let mut shown = Vec::new();
                j += 1;
                while j < lines.len() && lines[j].trim_end() != "```" {
                    shown.push(lines[j].trim_end().to_owned());
                    j += 1;
                }
                shown
            });
            out.push(Example {
                line: start,
                commands,
                exit: exit.take().map_or(0, |(_, code)| code),
                shown,
            });
        } else if let Some((at, _)) = exit
            && !line.is_empty()
        {
            panic!("README.md:{at}: an exit comment must come right before a console block");
        }
        i += 1;
    }
    out
}

/// Splits a command line into arguments: whitespace, single and double quotes. Anything the
/// shell would do more with (pipes, redirections, variables, globs) is refused: such an example
/// belongs in an `sh` block.
fn split(cmd: &str, line: usize) -> Vec<String> {
    let mut args = Vec::new();
    let mut arg: Option<String> = None;
    let mut quote: Option<char> = None;
    for c in cmd.chars() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), c) => arg.get_or_insert_with(String::new).push(c),
            (None, '\'' | '"') => {
                quote = Some(c);
                arg.get_or_insert_with(String::new);
            }
            (None, c) if c.is_whitespace() => args.extend(arg.take()),
            (None, '|' | '>' | '<' | ';' | '&' | '$' | '`' | '*' | '?' | '~' | '\\') => panic!(
                "README.md:{line}: `{cmd}` needs a shell; put it in an sh block, which is not run"
            ),
            (None, c) => arg.get_or_insert_with(String::new).push(c),
        }
    }
    assert!(
        quote.is_none(),
        "README.md:{line}: unclosed quote in `{cmd}`"
    );
    args.extend(arg);
    args
}

#[test]
fn splits_like_a_shell() {
    assert_eq!(
        split("diagnose  'a b' \"c\" d", 1),
        ["diagnose", "a b", "c", "d"]
    );
    assert_eq!(split("check ''", 1), ["check", ""]);
}

#[test]
fn readme_commands_print_what_the_readme_shows() {
    let readme = std::fs::read_to_string(repo("README.md")).unwrap();
    let examples = examples(&readme);
    let run: usize = examples.iter().map(|e| e.commands.len()).sum();
    assert!(run >= 5, "only {run} rewind commands found in README.md");
    for ex in &examples {
        let mut output = String::new();
        for args in &ex.commands {
            // The README shows output at 80 columns.
            let out = rewind()
                .current_dir(repo("."))
                .env("COLUMNS", "80")
                .env_remove("GITHUB_STEP_SUMMARY")
                .args(args)
                .output()
                .unwrap();
            let stdout = String::from_utf8_lossy(&out.stdout);
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert_eq!(
                out.status.code(),
                Some(ex.exit),
                "README.md:{}: `rewind {}` exited with {:?}, the README says {}\nstdout:\n{stdout}\nstderr:\n{stderr}",
                ex.line,
                args.join(" "),
                out.status.code(),
                ex.exit
            );
            output += &stdout;
            output += &stderr;
        }
        let Some(shown) = &ex.shown else { continue };
        let mut actual = output.lines().map(str::trim_end);
        for (n, want) in shown.iter().enumerate() {
            if want == "…" {
                continue;
            }
            assert!(
                actual.any(|got| got == want),
                "README.md:{}: line {} of the output shown after the block is not in the real output (or not in that order):\n{want}\nreal output:\n{output}",
                ex.line,
                n + 1
            );
        }
    }
}
