//! The agent-log reader's unit tests.

use super::*;

fn read(text: &str) -> (Vec<LogRecord>, LogStats) {
    let mut r = AgentLogReader::new(text.as_bytes(), FileId(0));
    let recs = r.by_ref().collect::<Result<Vec<_>, _>>();
    let stats = r.stats().clone();
    (recs.unwrap_or_default(), stats)
}

fn jsons(recs: &[LogRecord]) -> Vec<&JsonRecord> {
    recs.iter()
        .filter_map(|r| match r {
            LogRecord::Json(j) => Some(&**j),
            _ => None,
        })
        .collect()
}

const P: &str = "[2026-02-01T12:30:28.417Z] [INFO] ";

#[test]
fn pretty_printed_objects_with_prefixes() {
    let log = format!(
        "Solution draft log\n\n{P}{{\n{P}  \"type\": \"tool_use\",\n{P}  \"part\": {{\"id\": \"prt_1\"}}\n{P}}}\n{P}✅ done\n"
    );
    let (recs, stats) = read(&log);
    let js = jsons(&recs);
    assert_eq!(js.len(), 1);
    assert_eq!(js[0].value["type"], "tool_use");
    assert_eq!(stats.json_objects, 1);
    assert_eq!(stats.text_lines, 3);
    // The span covers `{` … `}` in the file.
    let start = js[0].span.offset as usize;
    assert_eq!(&log[start..start + 1], "{");
    assert_eq!(
        &log[js[0].span.end() as usize - 1..js[0].span.end() as usize],
        "}"
    );
}

#[test]
fn split_inside_a_string_is_rejoined_even_after_a_backslash() {
    // The wrapper cut the line right after a backslash of `\"`.
    let log = format!(
        "{P}{{\"type\":\"text\",\"text\":\"say \\\n[2026-02-01T12:30:29.000Z] [INFO] \"hi\\\" now\"}}\n"
    );
    let (recs, stats) = read(&log);
    let js = jsons(&recs);
    assert_eq!(js.len(), 1, "{recs:?}");
    assert_eq!(js[0].value["text"], "say \"hi\" now");
    assert_eq!(stats.rejoined_splits, 1);
    assert_eq!(stats.undecodable, 0);
}

#[test]
fn unprefixed_continuation_lines_and_compact_lines() {
    let log = format!(
        "{P}{{\n  \"type\": \"error\",\n  \"error\": \"The operation timed out.\"\n}}\n{{\"type\":\"step_start\"}}\n{{\"type\":\"a\"}}{{\"type\":\"b\"}}\n"
    );
    let (recs, _) = read(&log);
    let types: Vec<_> = jsons(&recs)
        .iter()
        .map(|j| j.value["type"].as_str().unwrap_or_default().to_owned())
        .collect();
    assert_eq!(types, ["error", "step_start", "a", "b"]);
}

#[test]
fn objects_of_one_long_line_hand_over_only_their_own_text() {
    // A log written without newlines: every object on one line. Each record's texts, taken
    // as it is yielded, are that object's, not the rest of the line.
    let object = r#"{"type":"log","level":"info","message":"x"}"#;
    let line = object.repeat(2000);
    let mut reader = AgentLogReader::new(line.as_bytes(), FileId(0)).deferred();
    let mut pending = 0;
    while let Some(record) = reader.next() {
        if let Ok(LogRecord::Pending(_)) = record {
            let texts = reader.take_texts();
            assert_eq!(texts.text, object);
            pending += 1;
        }
    }
    assert_eq!(pending, 2000);
}

#[test]
fn a_line_longer_than_a_piece_is_read_piece_by_piece() {
    // Objects on one line, over several pieces, one with a multi-byte character that some
    // piece boundary cuts, one larger than a piece; then a text line longer than a piece.
    let mut line = String::new();
    let mut objects = Vec::new();
    let mut padded = false;
    for i in 0..40_000 {
        let object = format!(r#"{{"type":"log","n":{i},"text":"é€𝄞"}}"#);
        let clef = object.find('𝄞').unwrap_or_default();
        if !padded && line.len() + object.len() > PIECE - 100 {
            // Spaces between two objects, so that the first piece ends inside the `𝄞`.
            line.push_str(&" ".repeat(PIECE - 2 - (line.len() + clef)));
            padded = true;
        }
        objects.push((line.len(), object.clone()));
        line.push_str(&object);
    }
    assert!(padded && !line.is_char_boundary(PIECE));
    let big = format!(r#"{{"type":"big","text":"{}"}}"#, "é".repeat(PIECE));
    objects.push((line.len(), big.clone()));
    line.push_str(&big);
    let log = format!(
        "{line}\n{}\n{{\"type\":\"last\"}}\n",
        "word ".repeat(PIECE / 2)
    );
    let mut reader = AgentLogReader::new(log.as_bytes(), FileId(0));
    let mut recs = Vec::new();
    while let Some(Ok(record)) = reader.next() {
        recs.push(record);
        // One piece at a time, not the whole line.
        assert!(
            reader.buf.capacity() <= 2 * PIECE,
            "{}",
            reader.buf.capacity()
        );
    }
    let stats = reader.stats().clone();
    let js = jsons(&recs);
    assert_eq!(js.len(), objects.len() + 1);
    for (record, (offset, text)) in js.iter().zip(&objects) {
        assert_eq!(record.span.offset, *offset as u64);
        assert_eq!(&*record.text, text.as_str());
    }
    assert_eq!(
        js[40_000].value["text"].as_str().map(str::len),
        Some(2 * PIECE)
    );
    assert_eq!(js[40_001].value["type"], "last");
    assert_eq!(stats.lines, 3);
    assert_eq!(stats.text_lines, 1);
    assert_eq!(stats.undecodable, 0);
}

/// What a reader makes of `log` read in pieces of `piece` bytes: the JSON records (span and
/// text), where the undecodable ones are, and the counts.
fn read_in_pieces(log: &[u8], piece: usize) -> (Vec<(Span, String)>, Vec<Span>, LogStats) {
    let mut reader = AgentLogReader::new(log, FileId(0));
    reader.piece = piece;
    let (mut json, mut undecodable) = (Vec::new(), Vec::new());
    for record in reader.by_ref() {
        match record {
            Ok(LogRecord::Json(j)) => json.push((j.span, j.text.to_string())),
            Ok(LogRecord::Undecodable { span, .. }) => undecodable.push(span),
            _ => {}
        }
    }
    (json, undecodable, reader.stats().clone())
}

#[test]
fn small_pieces_read_the_real_logs_as_whole_lines_do() {
    // Every agent log of the corpus and the samples, read whole-line and in pieces of a few
    // KiB (the wrapper's lines are up to 64 KiB): the same records, at the same bytes.
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut logs: Vec<std::path::PathBuf> = Vec::new();
    for dir in [
        root.join("samples"),
        root.join("../shared/corpus/agent-logs"),
    ] {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        logs.extend(
            entries
                .flatten()
                .map(|e| e.path())
                .filter(|p| p.extension().is_some_and(|x| x == "log" || x == "txt")),
        );
    }
    assert!(!logs.is_empty());
    for path in logs {
        let Ok(bytes) = std::fs::read(&path) else {
            continue;
        };
        let whole = read_in_pieces(&bytes, PIECE);
        for piece in [4096, 5000, 65_536] {
            let pieces = read_in_pieces(&bytes, piece);
            assert_eq!(pieces.0, whole.0, "{} in pieces of {piece}", path.display());
            assert_eq!(pieces.1, whole.1, "{} in pieces of {piece}", path.display());
            assert_eq!(pieces.2, whole.2, "{} in pieces of {piece}", path.display());
        }
    }
}

#[test]
fn small_pieces_read_every_one_byte_mutation_of_a_log_as_whole_lines_do() {
    // Prefixed pretty-printed and compact objects, several on a line, multi-byte characters,
    // a string split over two lines, text: every line longer than a 48-byte piece.
    let seed = format!(
        "{P}{{\n{P}  \"type\": \"tool_use\", \"part\": {{\"id\": \"prt_é€𝄞\"}}\n{P}}}\n\
         {{\"type\":\"log\",\"level\":\"error\",\"message\":\"é€𝄞 é€𝄞\"}}{{\"type\":\"b\"}} {{\"c\":1}}\n\
         {P}{{\"type\":\"text\",\"text\":\"split here\n{P}and on\"}}\n\
         plain text longer than one piece of forty-eight bytes, é€𝄞\n"
    );
    let mut compared = 0;
    for log in crate::text::one_byte_mutations(&seed) {
        assert_eq!(
            read_in_pieces(log.as_bytes(), 48),
            read_in_pieces(log.as_bytes(), PIECE),
            "{log}"
        );
        compared += 1;
    }
    assert!(compared > 5000, "{compared}");
}

/// Whole lines read where they lie in the input's buffer, checked a window at once, give the
/// records, errors and counts the line-by-line reading gives (a buffer of one byte never
/// holds a whole line): a NUL byte, a byte that is not UTF-8 and a character cut short, at
/// every position of a log of compact, prefixed and text lines.
#[test]
fn lines_checked_a_window_at_once_read_as_lines_read_one_by_one() {
    let seed = format!(
        "{{\"type\":\"log\",\"message\":\"é€𝄞\"}}\n{P}{{\"type\":\"b\"}}\n\
         plain text é\n{{\"type\":\"c\",\n{P}\"d\":1}}\n{{\"e\":\"𝄞\"}}\n"
    );
    let read = |reader: &mut dyn Iterator<Item = Result<LogRecord, IngestError>>| {
        reader.map(|r| format!("{r:?}")).collect::<Vec<_>>()
    };
    let mut compared = 0;
    for at in 0..=seed.len() {
        for bad in [&b"\0"[..], b"\xff", b"\xe2\x82", b"\n\0\n"] {
            let mut log = seed.as_bytes().to_vec();
            log.splice(at..at, bad.iter().copied());
            let mut whole = AgentLogReader::new(&log[..], FileId(0));
            let mut byte_by_byte =
                AgentLogReader::new(std::io::BufReader::with_capacity(1, &log[..]), FileId(0));
            assert_eq!(read(&mut whole), read(&mut byte_by_byte), "{bad:?} at {at}");
            assert_eq!(whole.stats(), byte_by_byte.stats(), "{bad:?} at {at}");
            compared += 1;
        }
    }
    assert!(compared > 300, "{compared}");
}

#[test]
fn a_long_line_cut_inside_a_character_is_truncated_there() {
    let object = r#"{"type":"log","text":"€€"}"#;
    let mut log = object.repeat(PIECE / object.len() + 10);
    log.push_str(r#"{"type":"log","text":"€"#);
    let bytes = &log.as_bytes()[..log.len() - 1];
    let mut reader = AgentLogReader::new(bytes, FileId(0));
    let recs: Vec<_> = reader.by_ref().filter_map(Result::ok).collect();
    assert!(matches!(
        recs.last(),
        Some(LogRecord::Undecodable {
            truncated: true,
            ..
        })
    ));
    assert_eq!(jsons(&recs).len(), PIECE / object.len() + 10);
}

#[test]
fn raw_error_dump_is_one_record() {
    let log = format!("{P}ZodError: [\n  {{\n    \"code\": \"invalid_union\"\n  }}\n]\n\n");
    let (recs, stats) = read(&log);
    assert!(
        matches!(&recs[0], LogRecord::RawError { name, record } if name == "ZodError" && record.value[0]["code"] == "invalid_union")
    );
    assert_eq!(stats.raw_errors, 1);
    assert_eq!(stats.json_objects, 0);
}

#[test]
fn truncated_object_is_reported_not_lost() {
    let log = format!("{P}{{\n{P}  \"type\": \"tool_use\",\n{P}  \"part\": {{");
    let (recs, stats) = read(&log);
    assert!(matches!(
        recs.last(),
        Some(LogRecord::Undecodable {
            truncated: true,
            ..
        })
    ));
    assert!(stats.truncated);
}

#[test]
fn object_cut_off_by_a_new_one_is_undecodable_and_the_new_one_survives() {
    let log = format!(
        "{P}{{\n{P}  \"type\": \"tool_use\",\n{P}✅ wrapper text\n{P}{{\"type\":\"ok\"}}\n"
    );
    let (recs, stats) = read(&log);
    assert_eq!(stats.undecodable, 1);
    assert_eq!(jsons(&recs)[0].value["type"], "ok");
}

#[test]
fn compact_line_split_before_a_nested_object_is_rejoined() {
    let log = format!(
        "{P}{{\"type\":\"tool_use\",\"part\":\n{P}{{\"id\":\"prt_1\",\"state\":{{\"status\":\"running\"}}}}}}\n{P}{{\"type\":\"next\"}}\n"
    );
    let (recs, stats) = read(&log);
    let js = jsons(&recs);
    assert_eq!(stats.undecodable, 0, "{recs:?}");
    assert_eq!(js[0].value["part"]["id"], "prt_1");
    assert_eq!(js[1].value["type"], "next");
}

#[test]
fn locate_maps_back_through_prefixes() {
    let log = format!(
        "{P}{{\n{P}  \"part\": {{\n{P}    \"state\": {{\"status\": \"running\"}}\n{P}  }}\n{P}}}\n"
    );
    let (recs, _) = read(&log);
    let js = jsons(&recs);
    let span = js[0]
        .locate(&["part".into(), "state".into(), "status".into()])
        .unwrap_or(Span::new(FileId(0), 0, 0));
    assert_eq!(
        &log[span.offset as usize..span.end() as usize],
        "\"running\""
    );
}

#[test]
fn locate_in_string_across_a_split() {
    let log = format!(
        "{P}{{\"error\":{{\"text\":\"{{\\\"id\\\":\\\"chat\n{P}cmpl-1data:{{\\\"id\\\":2}}\"}}}}\n"
    );
    let (recs, _) = read(&log);
    let js = jsons(&recs);
    let span = js[0]
        .locate_in_string(&["error".into(), "text".into()], "data:")
        .unwrap_or(Span::new(FileId(0), 0, 0));
    assert_eq!(&log[span.offset as usize..span.end() as usize], "data:");
}

#[test]
fn uncaught_errors_after_a_code_frame() {
    let bun = format!(
        "{P}1433 |       throw new ModelNotFoundError({{ providerID }});\n{P}                   ^\n{P}ProviderModelNotFoundError: ProviderModelNotFoundError\n{P} data: {{\n"
    );
    let node = "/app/index.js:10\n    throw new Error('boom');\n    ^\n\nTypeError: boom\n    at main (/app/index.js:10:11)\n";
    for log in [bun.as_str(), node] {
        let (recs, _) = read(log);
        let found: Vec<&str> = recs
            .iter()
            .filter_map(|r| match r {
                LogRecord::Uncaught { name, .. } => Some(name.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(found.len(), 1, "{log}: {recs:?}");
    }
    // Without a code frame, `Error: …` text is just text.
    let (recs, _) = read("Error: this is a note in a transcript\n");
    assert!(matches!(recs[0], LogRecord::Text(_)));
    let (recs, _) = read("Exit Code: 1\n");
    assert!(matches!(&recs[0], LogRecord::Status { success: false, .. }));
}

#[test]
fn the_prefix_is_recognised_like_its_regex() {
    let cases: [&[u8]; 8] = [
        P.as_bytes(),
        b"[2026-02-01T12:30:28.417Z] [STDERR] x",
        b"[2026-02-01T12:30:28.417Z] [WARNING] ",
        b"[2026-02-01T12:30:28.417Z] [DEBUG] x",
        b"[2026-02-01T12:30:28.41Z] [INFO] x",
        b"[2026-02-01 12:30:28.417Z] [INFO] x",
        b"[2026-02-01T12:30:28.417Z] [INFO]x",
        "[2026-02-01T12:30:28.41\u{0663}Z] [INFO] é".as_bytes(),
    ];
    for line in cases {
        let regex = PREFIX
            .as_ref()
            .and_then(|re| re.find(line))
            .map(|m| m.end());
        assert_eq!(prefix_len(line), regex, "{}", String::from_utf8_lossy(line));
    }
}

/// A wrapper's command line that runs an agent with a model is told from other text, and
/// its model's span is the model.
#[test]
fn a_wrapper_command_line_names_the_model() {
    for (line, spec) in [
        (
            "   /usr/bin/node /home/hive/.bun/bin/solve https://x/1 --tool agent --model kilo/glm-5-free --verbose\n",
            Some("kilo/glm-5-free"),
        ),
        (
            "(cd \"/tmp/s\" && cat \"/tmp/p.txt\" | agent --model=opencode/kimi-k2.5-free --verbose)\n",
            Some("opencode/kimi-k2.5-free"),
        ),
        (
            "Command: echo \"hi\" | agent --model google/gemini-3-pro --verbose\n",
            Some("google/gemini-3-pro"),
        ),
        ("   Model: kilo/glm-5-free\n", None),
        ("use --model <name> to choose a model\n", None),
    ] {
        let (recs, _) = read(line);
        let found = recs.iter().find_map(|r| match r {
            LogRecord::Command { spec, span } => Some((spec.clone(), *span)),
            _ => None,
        });
        assert_eq!(found.as_ref().map(|f| f.0.as_str()), spec, "{line}");
        if let Some((spec, span)) = found {
            let at = span.offset as usize;
            assert_eq!(&line[at..at + span.len as usize], spec);
        }
    }
}

/// Words that a run was stopped from outside are told from other text; the stamps say where
/// the log's time stands after the last JSON value and at the end.
#[test]
fn a_stopped_run_and_the_logs_time() {
    for (text, timeout) in [
        ("^C\n", Some(false)),
        (
            "[2026-02-14T10:51:02.118Z] [ERROR] ❌ Interrupted (CTRL+C)\n",
            Some(false),
        ),
        (
            "[2026-02-14T10:51:02.118Z] [INFO] ❌ Terminated\n",
            Some(false),
        ),
        (
            "2026-02-14T11:31:55.1180000Z ##[error]The operation was canceled.\n",
            Some(false),
        ),
        (
            "2026-02-14T11:31:55.1180000Z ##[error]The job running on runner R has exceeded the maximum execution time of 30 minutes.\n",
            Some(true),
        ),
        ("Press Ctrl+C to abort\n", None),
        ("❌ Interrupted by a test\n", None),
    ] {
        let (recs, _) = read(text);
        let found = recs.iter().find_map(|r| match r {
            LogRecord::Stopped { timeout, .. } => Some(*timeout),
            _ => None,
        });
        assert_eq!(found, timeout, "{text}");
    }
    let log = "[2026-02-14T10:12:00.408Z] [INFO] {\"a\":1}\n\
               [2026-02-14T10:50:51.522Z] [ERROR] ❌ Interrupted (CTRL+C)\n";
    let mut r = AgentLogReader::new(log.as_bytes(), FileId(0));
    while let Some(Ok(_)) = r.next() {}
    let (json, end) = r.stamps();
    assert_eq!(end.zip(json).map(|(e, j)| e - j), Some(2_331_114));
    let mut r = AgentLogReader::new(&b"{\"a\":1}\n"[..], FileId(0));
    while let Some(Ok(_)) = r.next() {}
    assert_eq!(r.stamps(), (None, None));
}

/// A record a wrapper mangled (`\^[` for ESC) is read leniently, its text and spans those of
/// the file; a record cut short names the ids it still holds.
#[test]
fn mangled_and_cut_records() {
    let mangled = r#"{"type":"user","content":"\^[[32mok\^[[0m","tool_use_id":"toolu_1"}"#;
    let (recs, _) = read(&format!("{mangled}\n"));
    let Some(LogRecord::Mangled { record, at, .. }) = recs.first() else {
        panic!("{recs:?}");
    };
    assert_eq!(record.value["tool_use_id"], "toolu_1");
    assert_eq!(record.value["content"], " ^[[32mok ^[[0m");
    assert_eq!(&*record.text, mangled);
    assert_eq!(at.offset as usize, mangled.find('\\').unwrap());
    let raw = "{\"a\":\"x\u{1b}[0m\"}\n";
    let (recs, _) = read(raw);
    assert!(
        matches!(recs.first(), Some(LogRecord::Mangled { .. })),
        "{recs:?}"
    );
    // Valid escapes and a literal backslash are left alone; JSON that is broken otherwise
    // stays undecodable.
    assert_eq!(record::unmangled(r#"{"a":"\\^[ \u001b \n"}"#), None);
    let cut = "{\"type\":\"user\",\"tool_use_id\":\"toolu_2\",\"content\":[\n{\"type\":\"log\"}\n";
    let (recs, _) = read(cut);
    let Some(LogRecord::Undecodable { mentions, .. }) = recs.first() else {
        panic!("{recs:?}");
    };
    assert_eq!(mentions.0, ["toolu_2"]);
    assert!(mentions.1.iter().any(|k| k == "user"), "{mentions:?}");
}

/// A GitHub Actions job log's prefixes, as the raw log and `gh run view --log` write them.
#[test]
fn a_ci_job_logs_prefix_is_recognised() {
    let cases: [(&[u8], Option<usize>); 9] = [
        (b"2026-01-02T03:04:05.1234567Z {", Some(29)),
        (b"2026-01-02T03:04:05Z x", Some(21)),
        (
            "\u{feff}2026-01-02T03:04:05.1234567Z x".as_bytes(),
            Some(32),
        ),
        (
            b"build\tRun agent\t2026-01-02T03:04:05.1234567Z {",
            Some(45),
        ),
        (b"build\tRun agent\t2026-01-02T03:04:05.1234567Z", None),
        (b"\tRun agent\t2026-01-02T03:04:05.1234567Z x", None),
        (b"2026-01-02T03:04:05.1234567890Z x", None),
        (b"2026-01-02 03:04:05.1234567Z x", None),
        (b"build\tRun agent\tnot a time", None),
    ];
    for (line, len) in cases {
        assert_eq!(
            ci_prefix_len(line),
            len,
            "{}",
            String::from_utf8_lossy(line)
        );
    }
}

/// The records of a CI job log are the JSON after the prefixes, and their spans point at
/// exactly those bytes, compact or pretty-printed.
#[test]
fn records_of_a_ci_job_log_span_their_json() {
    let compact = r#"{"type":"log","service":"default","message":"Agent started"}"#;
    let log = format!(
        "build\tRun agent\t2026-01-02T03:04:05.1234567Z {compact}\n\
         2026-01-02T03:04:06.0000001Z {{\n2026-01-02T03:04:06.0000002Z   \"type\": \"input\"\n\
         2026-01-02T03:04:06.0000003Z }}\n"
    );
    let (recs, _) = read(&log);
    let spans: Vec<Span> = recs
        .iter()
        .filter_map(|r| match r {
            LogRecord::Json(rec) => Some(rec.span),
            _ => None,
        })
        .collect();
    assert_eq!(spans.len(), 2, "{recs:?}");
    let text = |s: Span| &log[s.offset as usize..(s.offset + s.len) as usize];
    assert_eq!(text(spans[0]), compact);
    assert!(text(spans[1]).starts_with('{') && text(spans[1]).ends_with('}'));
    assert!(text(spans[1]).contains("\"type\": \"input\""));
}

/// Texts are handed over after the values yielded so far; a value queued behind them (a
/// second object on the same line) or still open goes with the next texts.
#[test]
fn texts_taken_between_values_of_one_line() {
    let log = format!("{{\"a\":1}}{{\"b\":2}}\n{P}{{\"c\":\n{P}3}}\n");
    let mut r = AgentLogReader::new(log.as_bytes(), FileId(0)).deferred();
    let mut decoded = Vec::new();
    let mut pending = Vec::new();
    while let Some(Ok(rec)) = r.next() {
        if let LogRecord::Pending(p) = rec {
            pending.push(p);
        }
        // Hand the texts over after every value, as a batch of one.
        let texts = r.take_texts();
        for p in pending.drain(..) {
            decoded.push(p.decode(&texts, Decoding::default()));
        }
    }
    let values: Vec<String> = jsons(&decoded)
        .iter()
        .map(|j| format!("{} {}", &*j.text, j.value))
        .collect();
    assert_eq!(
        values,
        [
            r#"{"a":1} {"a":1}"#,
            r#"{"b":2} {"b":2}"#,
            "{\"c\":\n3} {\"c\":3}"
        ]
    );
    let c = jsons(&decoded)[2];
    let three = c.span_of(c.text.len() - 2, c.text.len() - 1);
    assert_eq!(&log[three.offset as usize..three.end() as usize], "3");
}

#[test]
fn invalid_utf8_and_nul_are_errors_with_a_position() {
    let mut r = AgentLogReader::new(&b"ok\nbad \xff\n"[..], FileId(0));
    let err = r.find_map(Result::err);
    assert!(matches!(
        err,
        Some(IngestError::InvalidUtf8 { offset: 7, line: 2 })
    ));
    let mut r = AgentLogReader::new(&b"a\0b\n"[..], FileId(0));
    assert!(matches!(
        r.find_map(Result::err),
        Some(IngestError::Binary { offset: 1, line: 1 })
    ));
    // A NUL on a later line, in the same buffer as a whole line read where it is: the first
    // line is read, the NUL reported where it is (before and after a bad character).
    for (log, offset) in [
        (&b"{\"a\":1}\nxy\0\xff\n"[..], 10),
        (&b"{\"a\":1}\nx\xffy\0\n"[..], 11),
    ] {
        let mut r = AgentLogReader::new(log, FileId(0));
        assert!(matches!(r.next(), Some(Ok(LogRecord::Json(_)))));
        let err = r.find_map(Result::err);
        assert!(
            matches!(err, Some(IngestError::Binary { offset: o, line: 2 }) if o == offset),
            "{err:?}"
        );
    }
}

/// A JSON array of records (`claude-code-action`'s `claude-execution-output.json`), compact or
/// pretty-printed, reads as its elements, each spanning its object, and its punctuation is no
/// text; a small piece size cuts the compact line anywhere.
#[test]
fn an_array_of_records_reads_as_its_elements() {
    let a = r#"{"type":"system","subtype":"init","session_id":"s1"}"#;
    let b = r#"{"type":"result","is_error":false,"session_id":"s1"}"#;
    let compact = format!("[{a},{b}]\n");
    let pretty = "[\n  {\n    \"type\": \"system\",\n    \"session_id\": \"s1\"\n  },\n  {\n    \"type\": \"result\",\n    \"session_id\": \"s1\"\n  }\n]";
    for (log, piece) in [
        (compact.as_str(), PIECE),
        (compact.as_str(), 7),
        (pretty, PIECE),
    ] {
        let mut r = AgentLogReader::new(log.as_bytes(), FileId(0));
        r.piece = piece;
        let recs = r
            .by_ref()
            .collect::<Result<Vec<_>, _>>()
            .unwrap_or_default();
        let js = jsons(&recs);
        assert_eq!(js.len(), 2, "{log} {piece}: {recs:?}");
        assert_eq!(js[0].value["type"], "system");
        assert_eq!(js[1].value["type"], "result");
        for j in &js {
            let (start, end) = (j.span.offset as usize, j.span.end() as usize);
            assert_eq!((&log[start..start + 1], &log[end - 1..end]), ("{", "}"));
        }
        assert_eq!(r.stats().text_lines, 0, "{log}");
        assert_eq!(r.stats().undecodable, 0, "{log}");
    }
    // A `[` after a record opens no array: the line stays text.
    let (recs, stats) = read(&format!("{a}\n[\n  {b}\n]\n"));
    assert_eq!(jsons(&recs).len(), 1);
    assert_eq!(stats.text_lines, 3);
}
