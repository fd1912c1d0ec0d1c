//! dot and Mermaid say what happened: Greek names, checkpoint ranges, the
//! D-Mail from its sender, refused D-Mails, subagent descriptions; call ids
//! only outside labels; no session text opens a tag in Mermaid.

mod common;

use common::*;
use worldline::export::{dot, mermaid};
use worldline::worldline::Session;

fn load(scenario: &str) -> Session {
    Session::load(&fixture_session("kimi-cli", scenario)).unwrap()
}

/// The text of every `label="…"` in a dot file.
fn dot_labels(d: &str) -> Vec<String> {
    d.split("label=\"")
        .skip(1)
        .map(|rest| {
            let mut out = String::new();
            let mut esc = false;
            for c in rest.chars() {
                match (esc, c) {
                    (false, '\\') => esc = true,
                    (false, '"') => break,
                    (_, c) => {
                        out.push(c);
                        esc = false;
                    }
                }
            }
            out
        })
        .collect()
}

/// Mermaid text outside `%%` comments.
fn mermaid_body(m: &str) -> String {
    m.lines()
        .filter(|l| !l.trim_start().starts_with("%%"))
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn snapshots_of_the_dmail_fixtures() {
    for scenario in ["dmail_basic", "dmail_twice", "dmail_errors"] {
        let s = load(scenario);
        insta::assert_snapshot!(format!("{scenario}_dot"), dot(&s));
        insta::assert_snapshot!(format!("{scenario}_mermaid"), mermaid(&s));
    }
}

#[test]
fn every_world_line_is_named_with_its_checkpoints() {
    let s = load("dmail_twice");
    let d = dot(&s);
    let labels = dot_labels(&d).join("\n");
    for (name, range) in [
        ("α", "⚑0–⚑2"),
        ("β", "⚑0–⚑3 (⚑0–⚑1 shared)"),
        ("γ", "⚑0–⚑3 (⚑0–⚑2 shared)"),
    ] {
        assert!(labels.contains(&format!("{name}  ")), "{name}: {labels}");
        assert!(labels.contains(range), "{range}: {labels}");
    }
    // The D-Mails go from the sender's checkpoint to the one they reverted to.
    assert!(labels.contains("✉ D-Mail α⚑2 → ⚑1"), "{labels}");
    assert!(labels.contains("✉ D-Mail β⚑3 → ⚑2"), "{labels}");
    assert!(
        d.contains("a0l0 -> a0l1") && d.contains("a0l1 -> a0l2"),
        "{d}"
    );
    // Call ids are in tooltips, not labels.
    assert!(!labels.contains("c2") && !labels.contains("c4"), "{labels}");
    assert!(d.contains("call c2") && d.contains("call c4"), "{d}");
    let full = mermaid(&s);
    let m = mermaid_body(&full);
    assert!(m.contains("✉ D-Mail α⚑2 → ⚑1"), "{m}");
    assert!(!m.contains("call c2") && !m.contains("call c4"), "{m}");
    assert!(full.contains("%% SendDMail call c2"), "{full}");
}

#[test]
fn refused_dmails_are_shown_with_their_reason() {
    let s = load("dmail_errors");
    for out in [dot(&s), mermaid_body(&mermaid(&s))] {
        assert!(out.contains("✗ D-Mail → ⚑99 refused"), "{out}");
        assert!(out.contains("There is no checkpoint with"), "{out}");
        assert!(out.contains("✗ D-Mail → ⚑1 refused"), "{out}");
        assert!(out.contains("Only one D-Mail can be sent at"), "{out}");
        assert!(
            out.contains("sent at α⚑1") && out.contains("sent at α⚑2"),
            "{out}"
        );
    }
}

#[test]
fn subagents_are_described_and_hang_off_their_call() {
    let s = load("subagent");
    let d = dot(&s);
    assert!(d.contains("subgraph cluster_a1"), "{d}");
    assert!(
        d.contains("subagent coder [idle]") && d.contains("explore repo"),
        "{d}"
    );
    assert!(d.contains("a0l0 -> a1l0"), "{d}");
    assert!(!dot_labels(&d).join("\n").contains("aede5373b"), "{d}");
    let m = mermaid(&s);
    assert!(
        m.contains("subgraph a1[") && m.contains("explore repo"),
        "{m}"
    );
    assert!(m.contains("a0l0 -.->|"), "{m}");
}

/// context_3 reverts to a checkpoint context_1 wrote, though context_2 sent
/// the D-Mail: the fork edge leaves α and the D-Mail edge leaves β.
#[test]
fn the_sender_has_an_edge_to_the_world_line_it_created() {
    let dir = tempfile::tempdir().unwrap();
    let mut w1 = vec![sys()];
    for n in 0..4 {
        w1.extend(turn(n, &format!("step {n}"), "done"));
    }
    w1.push(dmail_call("a", "back to 2", 2));
    w1.push(dmail_ok("a"));
    let mut w2 = revert(&w1, 2, "back to 2");
    w2.extend(turn(3, "second try", "hm"));
    w2.push(dmail_call("b", "back to 1", 1));
    w2.push(dmail_ok("b"));
    let w3 = revert(&w2, 1, "back to 1");
    write(dir.path(), "context_1.jsonl", &w1);
    write(dir.path(), "context_2.jsonl", &w2);
    write(dir.path(), "context.jsonl", &w3);
    let s = Session::load(dir.path()).unwrap();
    let d = dot(&s);
    let edge = |from: &str, to: &str| {
        d.lines()
            .find(|l| l.trim_start().starts_with(&format!("{from} -> {to} ")))
            .unwrap_or_else(|| panic!("no {from} -> {to} in\n{d}"))
            .to_string()
    };
    assert!(edge("a0l0", "a0l2").contains("back to ⚑1"), "{d}");
    assert!(edge("a0l1", "a0l2").contains("✉ D-Mail β⚑3 → ⚑1"), "{d}");
}

#[test]
fn session_text_never_opens_a_tag_in_mermaid() {
    let dir = tempfile::tempdir().unwrap();
    let evil = "<img src=x onerror=alert(1)> \"]) --> x[\" `**md**` #amp; \x1b[31m";
    let mut old = vec![sys()];
    old.extend(turn(0, "a", "b"));
    old.push(dmail_call("c1", evil, 0));
    old.push(dmail_ok("c1"));
    old.push(dmail_call("c2", evil, 7));
    old.push(dmail_err("c2", "<b>no</b>"));
    write(dir.path(), "context_1.jsonl", &old);
    write(dir.path(), "context.jsonl", &revert(&old, 0, evil));
    let s = Session::load(dir.path()).unwrap();
    let m = mermaid_body(&mermaid(&s));
    let without_breaks = m.replace("<br/>", "");
    for bad in ['<', '>', '`', '\x1b'] {
        // `-->`, `-.->` and `>"` (the refused shape) are Mermaid's own.
        let stray = without_breaks
            .replace("-->", "")
            .replace("-.->", "")
            .replace(">\"", "");
        assert!(!stray.contains(bad), "{bad:?} in\n{m}");
    }
    // Every label's quotes stay balanced: session quotes became #34;.
    for l in m.lines() {
        assert_eq!(l.matches('"').count() % 2, 0, "{l}");
    }
    assert!(m.contains("#60;img src=x onerror=alert(1)#62;"), "{m}");
    let d = dot(&s);
    for l in d.lines() {
        let unescaped = l.replace("\\\\", "").replace("\\\"", "");
        assert_eq!(unescaped.matches('"').count() % 2, 0, "{l}");
    }
}
