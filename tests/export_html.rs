//! `tree --format html`: one self-contained page. Every world line (and
//! subagent) has its section and a link to it; session text is escaped, never
//! markup; and in a real headless Chromium the page makes no request at all
//! — checked by pointing the hostile page's own links at a listener on a
//! random loopback port that must see nothing, while a control page proves
//! the listener would have. No proxy: the browser's own background traffic
//! (update and sign-in services, which differ between Chromium builds) can't
//! reach the listener, so whatever it sees came from the page.

mod common;

use std::io::Read;
use std::net::TcpListener;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use common::*;
use worldline::export::html;
use worldline::worldline::Session;

#[test]
fn snapshots_of_the_dmail_fixtures() {
    for scenario in ["dmail_basic", "dmail_twice", "dmail_errors"] {
        let s = Session::load(&fixture_session("kimi-cli", scenario)).unwrap();
        insta::assert_snapshot!(format!("{scenario}_html"), html(&s));
    }
}

#[test]
fn every_world_line_has_a_section_and_a_link() {
    for dir in every_session() {
        let s = Session::load(&dir).unwrap();
        let page = html(&s);
        for (k, a) in s.agents.iter().enumerate() {
            for i in 0..a.family.lines.len() {
                let id = format!("a{k}-l{i}");
                assert!(
                    page.contains(&format!("<section id=\"{id}\"")),
                    "{}: no section {id}",
                    dir.display()
                );
                assert!(
                    page.contains(&format!("href=\"#{id}\"")),
                    "{}: nothing links to {id}",
                    dir.display()
                );
            }
        }
        assert!(
            page.contains("Content-Security-Policy"),
            "{}",
            dir.display()
        );
        for bad in ["<script", "<link", "<iframe", "src=", "url(", "@import"] {
            assert!(!page.contains(bad), "{}: {bad}", dir.display());
        }
        // Sessions made by /fork and /undo are named, as text, dot and
        // mermaid name them; and where this one came from.
        for f in &s.forks {
            let id: String = f.session.chars().take(8).collect();
            let want = format!("made from this one: /{} · {id}", f.kind.as_str());
            assert!(page.contains(&want), "{}: {want}", dir.display());
        }
        if s.forked_from.is_some() {
            assert!(page.contains("this session is a /"), "{}", dir.display());
        }
    }
}

#[test]
fn conversation_and_dmails_are_shown() {
    let s = Session::load(&fixture_session("kimi-cli", "dmail_errors")).unwrap();
    let page = html(&s);
    for want in [
        "errors please",
        "to the far future",
        "There is no checkpoint with the given ID",
        "Only one D-Mail can be sent at a time",
        "accepted: created <a href=\"#a0-l1\">world line β</a>",
        "After the revert to 0.",
        "<details><summary>",
    ] {
        assert!(page.contains(want), "{want} missing");
    }
    let s = Session::load(&fixture_session("kimi-cli", "subagent")).unwrap();
    let page = html(&s);
    assert!(page.contains("subagent coder · explore repo"), "{page}");
    assert!(page.contains("⇲ ran <a href=\"#a1\">subagent explore repo</a>"));
}

/// A session whose every text field tries to be markup or to fetch.
fn hostile_session(dir: &Path, probe: &str) {
    let evil = format!(
        "<script>fetch('{probe}/script')</script><img src=\"{probe}/img\">\
         <link rel=stylesheet href=\"{probe}/css\"><style>@import '{probe}/import';</style>\
         <iframe src=\"{probe}/frame\"></iframe>&amp; \x1b[31m"
    );
    let mut old = vec![sys()];
    old.extend(turn(0, &evil, &evil));
    old.push(dmail_call("c1", &evil, 0));
    old.push(dmail_ok("c1"));
    old.push(dmail_call("c2", &evil, 9));
    old.push(dmail_err("c2", &evil));
    write(dir, "context_1.jsonl", &old);
    write(dir, "context.jsonl", &revert(&old, 0, &evil));
    std::fs::write(
        dir.join("state.json"),
        serde_json::json!({ "custom_title": evil }).to_string(),
    )
    .unwrap();
}

#[test]
fn session_text_is_escaped_not_markup() {
    let dir = tempfile::tempdir().unwrap();
    hostile_session(dir.path(), "http://127.0.0.1:9");
    let page = html(&Session::load(dir.path()).unwrap());
    for bad in ["<script", "<img", "<iframe", "<link", "\x1b"] {
        assert!(!page.contains(bad), "{bad} reached the page");
    }
    assert!(page.contains("&lt;script&gt;fetch("));
    assert!(page.contains("␛[31m"));
}

/// Records requests to a local listener.
struct Probe {
    url: String,
    /// The first line of each request, for the failure message.
    seen: Arc<std::sync::Mutex<Vec<String>>>,
}

impl Probe {
    fn start() -> Probe {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
        let log = seen.clone();
        std::thread::spawn(move || {
            for conn in l.incoming() {
                let Ok(mut c) = conn else { continue };
                let _ = c.set_read_timeout(Some(Duration::from_millis(200)));
                let mut buf = [0u8; 1024];
                let n = c.read(&mut buf).unwrap_or(0);
                let first = String::from_utf8_lossy(&buf[..n]);
                log.lock()
                    .unwrap()
                    .push(first.lines().next().unwrap_or("").to_string());
                let _ = std::io::Write::write_all(
                    &mut c,
                    b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
                );
            }
        });
        Probe {
            url: format!("http://127.0.0.1:{port}"),
            seen,
        }
    }
}

/// The tags of a serialised DOM with their attributes. Text and attribute
/// values are escaped by the serialiser (`&lt;`, `&quot;`), so every raw `<`
/// opens a tag and every raw `"` in a tag delimits a value.
fn tags(dom: &str) -> Vec<(String, Vec<(String, String)>)> {
    let mut out = Vec::new();
    let mut rest = dom;
    while let Some(at) = rest.find('<') {
        rest = &rest[at + 1..];
        let name: String = rest
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '-')
            .collect::<String>()
            .to_ascii_lowercase();
        rest = &rest[name.len()..];
        let mut attrs = Vec::new();
        loop {
            rest = rest.trim_start_matches([' ', '\n', '\t', '/']);
            if rest.is_empty() || rest.starts_with('>') {
                break;
            }
            let key: String = rest
                .chars()
                .take_while(|c| !matches!(c, '=' | ' ' | '>' | '/'))
                .collect();
            rest = &rest[key.len()..];
            let mut value = String::new();
            if let Some(v) = rest.strip_prefix("=\"") {
                let end = v.find('"').unwrap_or(v.len());
                value = v[..end].to_string();
                rest = &v[(end + 1).min(v.len())..];
            }
            if key.is_empty() {
                // Not a tag after all (`<!DOCTYPE`, a comment): skip a char.
                rest = rest.get(1..).unwrap_or("");
                continue;
            }
            attrs.push((key.to_ascii_lowercase(), value));
        }
        if !name.is_empty() {
            out.push((name, attrs));
        }
    }
    out
}

/// The DOM after load. Only a page that names the probe's random port can
/// reach it.
fn dump_dom(browser: &Path, page: &Path) -> String {
    common::browser::dump_dom(browser, page, 3000, &[])
}

#[test]
fn headless_chromium_shows_every_world_line_and_makes_no_request() {
    let Some(browser) = common::browser::chromium() else {
        eprintln!("SKIP: no chromium on PATH (apt-get install chromium); the HTML browser test did not run");
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let probe = Probe::start();

    // The harness can see a request: a plain page with an image does fetch.
    let control = tmp.path().join("control.html");
    std::fs::write(
        &control,
        format!("<!DOCTYPE html><img src=\"{}/control.png\">", probe.url),
    )
    .unwrap();
    let dom = dump_dom(&browser, &control);
    // …and the tag scanner below sees its image.
    assert!(
        tags(&dom)
            .iter()
            .any(|(n, a)| n == "img" && a.iter().any(|(k, _)| k == "src")),
        "{dom}"
    );
    std::thread::sleep(Duration::from_millis(300));
    assert!(
        probe
            .seen
            .lock()
            .unwrap()
            .iter()
            .any(|l| l.contains("/control.png")),
        "the probe saw no request from the control page: {:?}",
        probe.seen.lock().unwrap()
    );
    probe.seen.lock().unwrap().clear();

    // The report names no host at all (checked on its DOM below), and the
    // hostile session's references all point at the probe itself.
    let mut pages = Vec::new();
    let hostile = tmp.path().join("hostile");
    std::fs::create_dir(&hostile).unwrap();
    hostile_session(&hostile, &probe.url);
    pages.push(hostile);
    pages.push(fixture_session("kimi-cli", "dmail_twice"));
    pages.push(fixture_session("kimi-cli", "subagent"));
    for (n, dir) in pages.iter().enumerate() {
        let s = Session::load(dir).unwrap();
        let file = tmp.path().join(format!("page{n}.html"));
        std::fs::write(&file, html(&s)).unwrap();
        let dom = dump_dom(&browser, &file);
        for (k, a) in s.agents.iter().enumerate() {
            for i in 0..a.family.lines.len() {
                assert!(
                    dom.contains(&format!("<section id=\"a{k}-l{i}\"")),
                    "{}: world line a{k}-l{i} not in the DOM",
                    dir.display()
                );
            }
        }
        for (name, attrs) in tags(&dom) {
            assert!(
                !["script", "img", "iframe", "link", "object", "embed", "image", "use"]
                    .contains(&name.as_str()),
                "{}: <{name}> in the DOM",
                dir.display()
            );
            for (k, v) in attrs {
                assert!(k != "src", "{}: <{name} src={v:.40}>", dir.display());
                // Every link stays inside the file.
                assert!(
                    k != "href" || v.starts_with('#'),
                    "{}: href={v:.40}",
                    dir.display()
                );
                assert!(
                    k != "style" || !v.contains("url("),
                    "{}: style={v:.40}",
                    dir.display()
                );
            }
        }
    }
    std::thread::sleep(Duration::from_millis(300));
    let page_requests: Vec<String> = probe.seen.lock().unwrap().clone();
    assert!(
        page_requests.is_empty(),
        "the report made requests: {page_requests:?}"
    );
}
