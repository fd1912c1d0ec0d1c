//! `tree --format svg`: on every fixture the map is well-formed XML, names
//! every world line and every D-Mail (full text in a tooltip), references
//! nothing outside itself, is sized to its content, and renders with
//! `rsvg-convert` to a picture of that size.

mod common;

use std::path::Path;
use std::process::Command;

use common::*;
use worldline::export::{map_svg, SvgOptions};
use worldline::worldline::names::line_name;
use worldline::worldline::Session;

/// All text a viewer can read: `<text>` contents and `<title>` tooltips.
fn texts(doc: &roxmltree::Document, tag: &str) -> Vec<String> {
    doc.descendants()
        .filter(|n| n.has_tag_name(tag))
        .map(|n| {
            n.descendants()
                .filter(|d| d.is_text())
                .filter_map(|d| d.text())
                .collect::<String>()
        })
        .collect()
}

fn size(doc: &roxmltree::Document) -> (f64, f64) {
    let root = doc.root_element();
    let num = |a: &str| root.attribute(a).unwrap().parse::<f64>().unwrap();
    (num("width"), num("height"))
}

#[test]
fn snapshots_of_the_dmail_fixtures() {
    for scenario in ["dmail_basic", "dmail_twice", "dmail_errors"] {
        let s = Session::load(&fixture_session("kimi-cli", scenario)).unwrap();
        insta::assert_snapshot!(
            format!("{scenario}_svg"),
            map_svg(&s, &SvgOptions::standalone())
        );
    }
}

#[test]
fn every_fixture_is_valid_svg_naming_every_world_line_and_dmail() {
    for dir in every_session() {
        let name = dir.display().to_string();
        let s = Session::load(&dir).unwrap();
        let svg = map_svg(&s, &SvgOptions::standalone());
        let doc = roxmltree::Document::parse(&svg).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(doc.root_element().tag_name().name(), "svg", "{name}");
        let shown = texts(&doc, "text").join("\n");
        let tips = texts(&doc, "title").join("\n");
        for (i, l) in s.main().lines.iter().enumerate() {
            assert!(shown.contains(&line_name(i)), "{name}: {} unnamed", l.file);
            assert!(shown.contains(&l.file), "{name}: {} not shown", l.file);
        }
        for a in &s.main().attempts {
            let want = format!("→ ⚑{}", a.checkpoint_id);
            assert!(shown.contains(&want), "{name}: D-Mail {want} missing");
            // The whole message, untruncated, in a tooltip.
            let full = worldline::text::sanitize(&a.message, false);
            assert!(tips.contains(&full), "{name}: {full:?} not in a tooltip");
        }
        for a in &s.agents[1..] {
            let d = a.meta.as_ref().and_then(|m| m.description.clone());
            if let (Some(d), Some(_)) = (d, a.parent_call) {
                assert!(shown.contains(&d), "{name}: subagent {d} missing");
            }
            // A subagent's own D-Mails are drawn too (its own map).
            for t in &a.family.attempts {
                let full = worldline::text::sanitize(&t.message, false);
                assert!(
                    tips.contains(&full),
                    "{name}: subagent D-Mail {full:?} dropped"
                );
            }
            if a.family.lines.len() > 1 {
                for i in 0..a.family.lines.len() {
                    assert!(shown.contains(&a.family.lines[i].file), "{name}");
                }
            }
        }
        // Sessions made from this one by /fork and /undo, as text and dot show.
        for f in &s.forks {
            let id: String = f.session.chars().take(8).collect();
            assert!(
                shown.contains(&format!("/{} · {id}", f.kind.as_str())),
                "{name}: {id}"
            );
        }
        // Nothing outside the file: no links, images, fonts or scripts.
        for n in doc.descendants() {
            assert!(
                !n.has_tag_name("script") && !n.has_tag_name("image"),
                "{name}"
            );
            for a in n.attributes() {
                assert!(a.name() != "href", "{name}: a link in a standalone map");
            }
        }
        assert!(!svg.contains("url(") && !svg.contains("@import"), "{name}");
    }
}

#[test]
fn the_picture_is_sized_to_its_content() {
    let small = Session::load(&fixture_session("kimi-cli", "subagent")).unwrap();
    let big = Session::load(&fixture_session("kimi-cli", "dmail_twice")).unwrap();
    let parse = |s: &Session| {
        let svg = map_svg(s, &SvgOptions::standalone());
        let doc = roxmltree::Document::parse(&svg).unwrap();
        size(&doc)
    };
    let (w1, h1) = parse(&small);
    let (w2, h2) = parse(&big);
    // One world line and no D-Mail is lower than three lines and two bands.
    assert!(h1 < h2, "{h1} vs {h2}");
    assert!(w1 < w2, "{w1} vs {w2}");
    assert!(w2 < 1400.0 && h2 < 400.0, "{w2}×{h2}");
    // Every coordinate drawn is inside the picture.
    let svg = map_svg(&big, &SvgOptions::standalone());
    let doc = roxmltree::Document::parse(&svg).unwrap();
    for n in doc.descendants().filter(|n| n.has_tag_name("text")) {
        let x: f64 = n.attribute("x").unwrap().parse().unwrap();
        let y: f64 = n.attribute("y").unwrap().parse().unwrap();
        assert!(
            x >= 0.0 && x < w2 && y > 0.0 && y < h2,
            "({x},{y}) outside {w2}×{h2}"
        );
    }
}

#[test]
fn session_text_stays_text() {
    let dir = tempfile::tempdir().unwrap();
    let evil = "</text><script>alert(1)</script>&nbsp; \x1b[2J\u{7}\u{fffe}";
    let mut old = vec![sys()];
    old.extend(turn(0, "a", "b"));
    old.push(dmail_call("c1", evil, 0));
    old.push(dmail_ok("c1"));
    old.push(dmail_call("c2", evil, 5));
    old.push(dmail_err("c2", evil));
    write(dir.path(), "context_1.jsonl", &old);
    write(dir.path(), "context.jsonl", &revert(&old, 0, evil));
    std::fs::write(
        dir.path().join("state.json"),
        serde_json::json!({ "custom_title": evil }).to_string(),
    )
    .unwrap();
    let s = Session::load(dir.path()).unwrap();
    let svg = map_svg(&s, &SvgOptions::standalone());
    let doc = roxmltree::Document::parse(&svg).expect("still valid XML");
    assert!(!doc.descendants().any(|n| n.has_tag_name("script")));
    assert!(texts(&doc, "title").join("").contains("</text><script>"));
}

#[test]
fn embedded_maps_link_each_track_to_its_section() {
    let s = Session::load(&fixture_session("kimi-cli", "dmail_twice")).unwrap();
    let svg = map_svg(&s, &SvgOptions::embedded());
    assert!(!svg.starts_with("<?xml"));
    let doc = roxmltree::Document::parse(&svg).unwrap();
    let links: Vec<&str> = doc
        .descendants()
        .filter_map(|n| n.attribute("href"))
        .collect();
    assert_eq!(links, ["#a0-l0", "#a0-l1", "#a0-l2"]);
}

/// PNG width and height from its IHDR.
fn png_size(p: &Path) -> (u32, u32) {
    let b = std::fs::read(p).unwrap();
    assert_eq!(&b[1..4], b"PNG");
    let n = |i: usize| u32::from_be_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]]);
    (n(16), n(20))
}

#[test]
fn rsvg_convert_renders_every_session() {
    let Some(rsvg) = which(&["rsvg-convert"]) else {
        eprintln!("SKIP: no rsvg-convert on PATH (apt-get install librsvg2-bin); the SVG render test did not run");
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    for (k, dir) in every_session().iter().enumerate() {
        let s = Session::load(dir).unwrap();
        let svg = map_svg(&s, &SvgOptions::standalone());
        let (w, h) = size(&roxmltree::Document::parse(&svg).unwrap());
        let (src, png) = (
            tmp.path().join(format!("{k}.svg")),
            tmp.path().join(format!("{k}.png")),
        );
        std::fs::write(&src, &svg).unwrap();
        let out = Command::new(&rsvg)
            .arg(&src)
            .arg("-o")
            .arg(&png)
            .output()
            .unwrap();
        assert!(
            out.status.success() && out.stderr.is_empty(),
            "{}: {}",
            dir.display(),
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(png_size(&png), (w as u32, h as u32), "{}", dir.display());
    }
}

/// The README's picture is what the documented command writes today.
#[test]
fn the_readme_picture_is_current() {
    let s = Session::load(&fixture_session("kimi-cli", "dmail_twice")).unwrap();
    let want = map_svg(&s, &SvgOptions::standalone());
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/worldline-map.svg");
    let have = std::fs::read_to_string(&path).unwrap();
    assert!(
        have == want,
        "docs/worldline-map.svg is stale: run `worldline tree fixtures/kimi-cli/dmail_twice/sessions/*/* --format svg > docs/worldline-map.svg`"
    );
}
