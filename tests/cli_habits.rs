//! The command line's habits: colour from the flag and the environment, output files, quiet
//! runs, one-line findings, statistics, suggestions for mistyped rules.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use common::*;

/// Runs with no colour variable set (the helper sets `NO_COLOR`) and `env` added.
fn colored(env: &[(&str, &str)], args: &[&str]) -> bool {
    let mut cmd = rewind();
    for var in ["NO_COLOR", "FORCE_COLOR", "CLICOLOR_FORCE", "CLICOLOR"] {
        cmd.env_remove(var);
    }
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.args(args).output().unwrap();
    String::from_utf8_lossy(&out.stdout).contains('\u{1b}')
}

#[test]
fn colour_follows_the_flag_then_the_environment() {
    let broken = repo("samples/zod-failed-status.log");
    let broken = broken.to_str().unwrap();
    let sse = repo("samples/tanstack-tool-error.sse");
    let sse = sse.to_str().unwrap();
    let dir = repo("samples");
    let dir = dir.to_str().unwrap();
    for args in [
        vec!["diagnose", broken],
        vec!["check", dir],
        vec!["replay", sse],
    ] {
        // Not a terminal: no colour by default.
        assert!(!colored(&[], &args), "{args:?}");
        for force in [("FORCE_COLOR", "1"), ("CLICOLOR_FORCE", "1")] {
            assert!(colored(&[force], &args), "{force:?} {args:?}");
        }
        assert!(!colored(&[("FORCE_COLOR", "0")], &args), "{args:?}");
        assert!(!colored(&[("FORCE_COLOR", "")], &args), "{args:?}");
        assert!(
            !colored(&[("NO_COLOR", "1"), ("FORCE_COLOR", "1")], &args),
            "NO_COLOR first: {args:?}"
        );
        assert!(
            !colored(
                &[("CLICOLOR", "0")],
                &[&["--color", "auto"], &args[..]].concat()
            ),
            "{args:?}"
        );
        // The flag wins over the environment.
        let always = [&["--color", "always"], &args[..]].concat();
        assert!(colored(&[("NO_COLOR", "1"), ("CLICOLOR", "0")], &always));
        let never = [&["--color", "never"], &args[..]].concat();
        assert!(!colored(
            &[("FORCE_COLOR", "1"), ("CLICOLOR_FORCE", "1")],
            &never
        ));
    }
}