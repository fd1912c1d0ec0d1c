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
        m.contains("subgraph a1 [") && m.contains("explore repo"),
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

/// A D-Mail ending in a Mermaid directive: Mermaid finds `%%{…}%%`
/// anywhere (comments too), so no `%` of session text may reach the file.
#[test]
fn session_text_never_spells_a_mermaid_directive() {
    let dir = tempfile::tempdir().unwrap();
    let evil = "fix it %%{init: {'theme':'forest'}}%% and %%{x: swallow";
    let mut old = vec![sys()];
    old.extend(turn(0, "a", "b"));
    old.push(dmail_call("c1", evil, 0));
    old.push(dmail_ok("c1"));
    write(dir.path(), "context_1.jsonl", &old);
    write(dir.path(), "context.jsonl", &revert(&old, 0, evil));
    let s = Session::load(dir.path()).unwrap();
    let m = mermaid(&s);
    assert!(m.contains("fix it #37;#37;{init"), "{m}");
    for l in m.lines() {
        // Mermaid's own comment marker starts the line; nothing else has `%`.
        let rest = l.trim_start().strip_prefix("%%").unwrap_or(l);
        assert!(!rest.contains('%'), "{l}");
    }
}

/// Mermaid's own parser and renderer, from the npm package's
/// `dist/mermaid.min.js` (`.ci/run` fetches it into `target/mermaid/`;
/// `WORLDLINE_MERMAID_JS` points elsewhere).
fn mermaid_js() -> Option<std::path::PathBuf> {
    let p = std::env::var_os("WORLDLINE_MERMAID_JS")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| {
            std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("target/mermaid/package/dist/mermaid.min.js")
        });
    p.is_file().then_some(p)
}

#[test]
fn mermaid_itself_renders_every_fixture_and_keeps_text_as_text() {
    let (Some(browser), Some(js)) = (common::browser::chromium(), mermaid_js()) else {
        eprintln!(
            "SKIP: needs chromium and mermaid.min.js (npm pack mermaid@11 into target/mermaid); the Mermaid render test did not run"
        );
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let hostile = tmp.path().join("hostile");
    std::fs::create_dir(&hostile).unwrap();
    let evil = "<img src=x onerror=alert(1)> \"]) --> x[\" `**md**` #amp; end";
    let mut old = vec![sys()];
    old.extend(turn(0, "a", "b"));
    old.push(dmail_call("c1", evil, 0));
    old.push(dmail_ok("c1"));
    old.push(dmail_call("c2", evil, 7));
    old.push(dmail_err("c2", evil));
    write(&hostile, "context_1.jsonl", &old);
    write(&hostile, "context.jsonl", &revert(&old, 0, evil));
    let mut dirs = every_session();
    dirs.push(hostile.clone());
    let sessions: Vec<Session> = dirs.iter().map(|d| Session::load(d).unwrap()).collect();
    let sources: Vec<String> = sessions.iter().map(mermaid).collect();
    // One page renders them all, each into its own element, in turn.
    // A JSON string is a JS string; `</` must not end the script.
    let literal = serde_json::to_string(&sources)
        .unwrap()
        .replace("</", "<\\/");
    let page = tmp.path().join("mermaid.html");
    std::fs::write(
        &page,
        format!(
            "<!DOCTYPE html><html><head><meta charset=\"utf-8\"><script src=\"file://{}\"></script><script>\
             addEventListener('DOMContentLoaded', async () => {{\
             mermaid.initialize({{startOnLoad: false, securityLevel: 'strict'}});\
             const all = {literal};\
             for (let k = 0; k < all.length; k++) {{\
               const div = document.createElement('div'); div.id = 'out' + k; document.body.appendChild(div);\
               try {{ div.innerHTML = (await mermaid.render('g' + k, all[k])).svg; div.dataset.ok = '1'; }}\
               catch (e) {{ div.dataset.err = String((e && e.message) || e); }}\
             }} document.body.dataset.done = '1'; }});\
             </script></head><body></body></html>",
            js.display()
        ),
    )
    .unwrap();
    let dom = common::browser::dump_dom(&browser, &page, 30_000, &[]);
    assert!(dom.contains("data-done=\"1\""), "{dom:.2000}");
    for (k, (dir, s)) in dirs.iter().zip(&sessions).enumerate() {
        let name = dir.display();
        let at = dom
            .find(&format!("<div id=\"out{k}\""))
            .unwrap_or_else(|| panic!("{name}: not rendered"));
        let out = &dom[at..];
        let out = &out[..out[1..]
            .find("<div id=\"out")
            .map_or_else(|| out.rfind("</body>").unwrap_or(out.len()), |e| e + 1)];
        assert!(
            out.starts_with(&format!("<div id=\"out{k}\" data-ok=\"1\"")),
            "{name}: Mermaid refused it:\n{}\n{out:.600}",
            sources[k]
        );
        for i in 0..s.main().lines.len() {
            let n = worldline::worldline::names::line_name(i);
            assert!(out.contains(&n), "{name}: {n} not drawn");
        }
        for bad in ["<img", "<script", "onerror=\"", "<strong>"] {
            assert!(!out.contains(bad), "{name}: {bad} in Mermaid's drawing");
        }
        if *dir == hostile {
            assert!(
                out.contains("&lt;img src=x onerror=alert(1)&gt;"),
                "{out:.3000}"
            );
        }
    }
}

#[test]
fn a_compaction_inside_a_world_line_is_on_its_node() {
    // Kimi Code compacts inside a branch: no world line of its own, so the
    // node of the line it happened on says so (as the text tree does).
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(
        "fixtures/kimi-code/r_two_undos_compact_fork/home/sessions/wd_project_76860d8b5438/session_480a004a-1a94-4159-a609-f6ca09d99596",
    );
    let s = Session::load(&dir).unwrap();
    let d = dot(&s);
    let beta = dot_labels(&d)
        .into_iter()
        .find(|l| l.starts_with("β"))
        .unwrap();
    assert!(beta.contains("⊜ compacted at line 84"), "{d}");
    let m = mermaid_body(&mermaid(&s));
    let node = m.lines().find(|l| l.contains("a0l1(")).unwrap();
    assert!(node.contains("compacted at line 84"), "{m}");
}
