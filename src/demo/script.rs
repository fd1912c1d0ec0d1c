//! What the demo agent says and does: a finite list of turns and steps that
//! ends with an epilogue. A step can be gated on lessons (`before`/`after`):
//! the demo's own D-Mails teach them, and so does a user's D-Mail that says
//! the same thing (see `lessons`), so after a revert the agent replays from
//! the target and takes the better path.

use crate::kimi_writer::{Json, ToolOutput};

/// A lesson the agent can learn: the demo's own D-Mail `n` teaches lesson
/// `n`; a user's D-Mail can teach the `USER_*` ones.
pub type DMailId = u8;

/// The user's D-Mail says cli.py is broken too (what own D-Mail 1 says).
pub const USER_CLI: DMailId = 11;
/// The user's D-Mail asks for the blank-row option up front.
pub const USER_BLANK: DMailId = 12;

/// Words that, in a user's D-Mail, teach a lesson: the agent then skips the
/// detour that lesson's own D-Mail would have cut short.
pub fn lessons() -> &'static [(DMailId, &'static [&'static str])] {
    &[
        (
            USER_CLI,
            &["cli.py", "header=", "keyword", "skip_header=", "both"],
        ),
        (USER_BLANK, &["skip-blank", "skip_blank", "blank"]),
    ]
}

#[derive(Debug, Clone)]
pub struct Item {
    pub label: Option<&'static str>,
    /// Runs only while none of these own D-Mails has been applied.
    pub before: Vec<DMailId>,
    /// Runs only once all of these own D-Mails have been applied.
    pub after: Vec<DMailId>,
    pub kind: ItemKind,
}

#[derive(Debug, Clone)]
pub enum ItemKind {
    Turn {
        user: String,
    },
    Step(StepSpec),
    /// The last step: the agent's closing words about the world lines it
    /// made, written when it gets there.
    Epilogue,
}

#[derive(Debug, Clone)]
pub struct StepSpec {
    pub think: Option<String>,
    pub text: String,
    pub tools: Vec<ToolSpec>,
}

#[derive(Debug, Clone)]
pub enum ToolSpec {
    Call {
        name: &'static str,
        args: Json,
        result: ToolOutput,
    },
    Subagent(SubTask),
    /// A SendDMail call back to the checkpoint made at the labelled item.
    DMail {
        id: DMailId,
        target: &'static str,
        message: String,
    },
}

#[derive(Debug, Clone)]
pub struct SubTask {
    pub subagent_type: &'static str,
    pub description: &'static str,
    pub prompt: &'static str,
    /// Each step: assistant text and the tool it calls.
    pub steps: Vec<(String, ToolSpec)>,
    pub summary: String,
}

impl Item {
    pub fn gate(mut self, before: &[DMailId], after: &[DMailId]) -> Item {
        self.before = before.to_vec();
        self.after = after.to_vec();
        self
    }

    pub fn label(mut self, label: &'static str) -> Item {
        self.label = Some(label);
        self
    }

    pub fn is_turn(&self) -> bool {
        matches!(self.kind, ItemKind::Turn { .. })
    }
}

fn item(kind: ItemKind) -> Item {
    Item {
        label: None,
        before: Vec::new(),
        after: Vec::new(),
        kind,
    }
}

pub fn turn(user: &str) -> Item {
    item(ItemKind::Turn { user: user.into() })
}

pub fn step(think: Option<&str>, text: &str, tools: Vec<ToolSpec>) -> Item {
    item(ItemKind::Step(StepSpec {
        think: think.map(str::to_owned),
        text: text.into(),
        tools,
    }))
}

fn obj(pairs: &[(&str, Json)]) -> Json {
    Json::obj(pairs.iter().map(|(k, v)| (*k, v.clone())))
}

pub fn shell(command: &str, output: &str, exit_code: i32) -> ToolSpec {
    let result = if exit_code == 0 {
        ToolOutput::ok("Command executed successfully.", output)
    } else {
        ToolOutput {
            is_error: true,
            output: output.into(),
            message: format!("Command failed with exit code: {exit_code}."),
            display: Vec::new(),
        }
    };
    ToolSpec::Call {
        name: "Shell",
        args: obj(&[("command", Json::str(command))]),
        result,
    }
}

pub fn read_file(path: &str, content: &str) -> ToolSpec {
    let lines: Vec<&str> = content.lines().collect();
    let n = lines.len();
    let numbered: String = lines
        .iter()
        .enumerate()
        .map(|(i, l)| format!("{:>6}\t{l}\n", i + 1))
        .collect();
    ToolSpec::Call {
        name: "ReadFile",
        args: obj(&[("path", Json::str(path))]),
        result: ToolOutput::ok(
            format!("{n} lines read from file starting from line 1. Total lines in file: {n}. End of file reached."),
            numbered,
        ),
    }
}

pub fn str_replace(path: &str, old: &str, new: &str) -> ToolSpec {
    ToolSpec::Call {
        name: "StrReplaceFile",
        args: obj(&[
            ("path", Json::str(path)),
            (
                "edit",
                obj(&[("old", Json::str(old)), ("new", Json::str(new))]),
            ),
        ]),
        result: ToolOutput::ok(
            "File successfully edited. Applied 1 edit(s) with 1 total replacement(s).",
            "",
        ),
    }
}

pub fn write_file(path: &str, content: &str) -> ToolSpec {
    ToolSpec::Call {
        name: "WriteFile",
        args: obj(&[("path", Json::str(path)), ("content", Json::str(content))]),
        result: ToolOutput::ok(
            format!(
                "File successfully overwritten. Current size: {} bytes.",
                content.len()
            ),
            "",
        ),
    }
}

pub fn grep(pattern: &str, output: &str) -> ToolSpec {
    ToolSpec::Call {
        name: "Grep",
        args: obj(&[
            ("pattern", Json::str(pattern)),
            ("path", Json::str(".")),
            ("output_mode", Json::str("content")),
            ("-n", Json::Bool(true)),
        ]),
        result: ToolOutput::ok("", output),
    }
}

pub fn dmail(id: DMailId, target: &'static str, message: &str) -> ToolSpec {
    ToolSpec::DMail {
        id,
        target,
        message: message.into(),
    }
}

const PARSE_PY: &str = "import csv\nfrom decimal import Decimal\n\n\ndef read_rows(path, skip_header=False):\n    with open(path, newline=\"\") as f:\n        reader = csv.reader(f)\n        rows = list(reader)\n        if skip_header:\n            next(reader, None)\n    return rows\n\n\ndef column_total(rows, index):\n    return sum(Decimal(row[index]) for row in rows if row)\n";

const CLI_PY: &str = "import argparse\n\nfrom tally.parse import column_total, read_rows\n\n\ndef main(argv=None):\n    parser = argparse.ArgumentParser(prog=\"tally\")\n    sub = parser.add_subparsers(dest=\"command\", required=True)\n    total = sub.add_parser(\"sum\", help=\"sum one column of a CSV file\")\n    total.add_argument(\"file\")\n    total.add_argument(\"--column\", type=int, default=1)\n    total.add_argument(\"--header\", action=\"store_true\")\n    args = parser.parse_args(argv)\n    rows = read_rows(args.file, header=args.header)\n    print(column_total(rows, args.column))\n";

const PYTEST_HEADER_FAIL: &str = "..F....                                                                  [100%]\n=================================== FAILURES ===================================\n____________________________ test_sum_skips_header _____________________________\n\ntmp_path = PosixPath('/tmp/pytest-of-demo/pytest-12/test_sum_skips_header0')\n\n    def test_sum_skips_header(tmp_path):\n        path = tmp_path / \"sales.csv\"\n        path.write_text(\"region,amount\\nnorth,10.50\\nsouth,4.25\\n\")\n>       assert column_total(read_rows(path, skip_header=True), 1) == Decimal(\"14.75\")\n\ntests/test_parse.py:18: \n_ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ \ntally/parse.py:15: in <genexpr>\n    return sum(Decimal(row[index]) for row in rows if row)\nE   decimal.InvalidOperation: [<class 'decimal.ConversionSyntax'>]\n=========================== short test summary info ============================\nFAILED tests/test_parse.py::test_sum_skips_header - decimal.InvalidOperation: [<class 'decimal.ConversionSyntax'>]\n1 failed, 6 passed in 0.09s\n";

const PYTEST_CLI_FAIL: &str = "......F                                                                  [100%]\n=================================== FAILURES ===================================\n____________________________ test_cli_sum_header _______________________________\n\ncapsys = <_pytest.capture.CaptureFixture object at 0x7f3a2c1d5e50>\n\n    def test_cli_sum_header(capsys, sales_csv):\n>       main([\"sum\", str(sales_csv), \"--header\"])\n\ntests/test_cli.py:9: \n_ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ \ntally/cli.py:14: in main\n    rows = read_rows(args.file, header=args.header)\nE   TypeError: read_rows() got an unexpected keyword argument 'header'\n=========================== short test summary info ============================\nFAILED tests/test_cli.py::test_cli_sum_header - TypeError: read_rows() got an unexpected keyword argument 'header'\n1 failed, 6 passed in 0.08s\n";

const PARSE_PY_FIXED: &str = "import csv\nfrom decimal import Decimal\n\n\ndef read_rows(path, skip_header=False):\n    with open(path, newline=\"\") as f:\n        reader = csv.reader(f)\n        if skip_header:\n            next(reader, None)\n        rows = list(reader)\n    return rows\n\n\ndef column_total(rows, index):\n    return sum(Decimal(row[index]) for row in rows if row)\n";

const PARSE_PY_PARTIAL: &str = "import csv\nfrom decimal import Decimal\n\n\ndef read_rows(path, skip_header=False, skip_blank=False):\n    with open(path, newline=\"\") as f:\n        reader = csv.reader(f)\n        if skip_header:\n            next(reader, None)\n        rows = list(reader)\n    return rows\n\n\ndef column_total(rows, index):\n    return sum(Decimal(row[index]) for row in rows if row)\n";

const TEST_PARSE_PY: &str = "from decimal import Decimal\n\nimport pytest\nfrom tally.parse import column_total, read_rows\n\n\ndef test_total_simple(tmp_path):\n    path = tmp_path / \"a.csv\"\n    path.write_text(\"x,1\\ny,2\\n\")\n    assert column_total(read_rows(path), 1) == Decimal(\"3\")\n";

const TEST_SKIP_BLANK_PY: &str = "from tally.cli import main\n\n\ndef test_skip_blank(tmp_path, capsys):\n    path = tmp_path / \"gaps.csv\"\n    path.write_text(\"a,1\\n,\\nb,2\\n\")\n    main([\"sum\", str(path), \"--skip-blank\"])\n    assert capsys.readouterr().out.strip() == \"3\"\n";

const README_MD: &str =
    "# tally\n\nSum columns of CSV files.\n\n## Usage\n\n    tally sum data.csv --column 2\n";

pub const PYTEST_ALL_7: &str =
    ".......                                                                  [100%]\n7 passed in 0.07s\n";
pub const PYTEST_ALL_9: &str =
    ".........                                                                [100%]\n9 passed in 0.09s\n";

/// The files of the demo's project as the agent first finds them, for a
/// user's D-Mail that names one.
pub fn project_file(path: &str) -> Option<&'static str> {
    Some(match path.trim_start_matches("./") {
        "tally/parse.py" => PARSE_PY,
        "tally/cli.py" => CLI_PY,
        "tally/__init__.py" => "",
        "tests/test_parse.py" => TEST_PARSE_PY,
        "tests/test_cli.py" => "from tally.cli import main\n\n\ndef test_cli_sum_header(capsys, sales_csv):\n    main([\"sum\", str(sales_csv), \"--header\"])\n    assert capsys.readouterr().out.strip() == \"14.75\"\n",
        "tests/conftest.py" => "import pytest\n\n\n@pytest.fixture\ndef sales_csv(tmp_path):\n    path = tmp_path / \"sales.csv\"\n    path.write_text(\"region,amount\\nnorth,10.50\\nsouth,4.25\\n\")\n    return path\n",
        "README.md" => README_MD,
        "data/sales.csv" => "region,amount\nnorth,10.50\nsouth,4.25\n",
        _ => return None,
    })
}

/// What `python -m pytest -q` prints at this point of the story: before the
/// parse fix, between the two fixes, or after both.
pub fn pytest_output(parse_fixed: bool, cli_fixed: bool) -> (&'static str, i32) {
    match (parse_fixed, cli_fixed) {
        (false, _) => (PYTEST_HEADER_FAIL, 1),
        (true, false) => (PYTEST_CLI_FAIL, 1),
        (true, true) => (PYTEST_ALL_7, 0),
    }
}

/// Own D-Mail 1 leads with what to do (the map's reason, the rows and
/// `tree` show its start), then, as the compose box suggests, what is
/// already on disk: a revert rewinds the conversation, never the files.
const DMAIL_1: &str = "Fix one line: tally/cli.py calls read_rows(args.file, header=args.header) but the parameter is skip_header; then run the tests once. The explore subagent had already said cli.py is the only caller. Already on disk (a revert rewinds only this conversation): tally/parse.py now skips the header before list(reader), and the tests ran after it: only test_cli_sum_header fails.";

const DMAIL_2: &str = "Do it in one pass: make skip_blank drop rows whose cells are all blank, add `--skip-blank` (store_true) to the sum parser and pass it through (the user asks for that flag next anyway), then run pytest once: all 9 tests pass. Already on disk (a revert keeps files): tally/parse.py skips the header first and read_rows takes skip_blank=False but ignores it; tally/cli.py passes skip_header=args.header; tests/test_skip_blank.py exists and fails.";

const FIXED_ANSWER: &str = "Fixed. `read_rows` consumed the whole file before skipping the header, so the header reached `Decimal()`; the skip now happens first. `tally/cli.py` also passed `header=` instead of `skip_header=`. All 7 tests pass.";

const ONE_PASS_ANSWER: &str = "Fixed, and one step ahead:\n- `read_rows` skipped the header only after reading every row, so `Decimal('amount')` crashed; it now skips first.\n- `tally/cli.py` passed `header=` instead of `skip_header=`.\n- New `--skip-blank` flag drops rows whose cells are all empty, tested by `tests/test_skip_blank.py`.\n\nAll 9 tests pass.";

const HEADER_SKIP_OLD: &str =
    "        rows = list(reader)\n        if skip_header:\n            next(reader, None)\n";
const HEADER_SKIP_NEW: &str =
    "        if skip_header:\n            next(reader, None)\n        rows = list(reader)\n";

fn explore_subagent() -> SubTask {
    SubTask {
        subagent_type: "explore",
        description: "find read_rows callers",
        prompt: "Find every caller of tally.parse.read_rows in this repository and report how each one passes the header option. Do not edit anything.",
        steps: vec![
            (
                "Searching for read_rows.".into(),
                grep(
                    "read_rows",
                    "tally/cli.py:3:from tally.parse import column_total, read_rows\ntally/cli.py:14:    rows = read_rows(args.file, header=args.header)\ntally/parse.py:5:def read_rows(path, skip_header=False):\ntests/test_parse.py:4:from tally.parse import column_total, read_rows\ntests/test_parse.py:18:    assert column_total(read_rows(path, skip_header=True), 1) == Decimal(\"14.75\")\n",
                ),
            ),
            ("Checking the CLI call site.".into(), read_file("tally/cli.py", CLI_PY)),
        ],
        summary: "read_rows has one production caller: tally/cli.py line 14, `read_rows(args.file, header=args.header)`. Note the keyword is `header`, but read_rows takes `skip_header`, so the CLI path raises TypeError as soon as it runs. tests/test_parse.py calls it correctly with skip_header=True.".into(),
    }
}

/// The one-line fix of the CLI's call: `skip_header=`, not `header=`.
fn fix_cli_keyword() -> ToolSpec {
    str_replace(
        "tally/cli.py",
        "read_rows(args.file, header=args.header)",
        "read_rows(args.file, skip_header=args.header)",
    )
}

/// The scripted session: a CSV tool with a header bug, two own D-Mails,
/// and an epilogue. Gates: path A runs while nothing is learnt; B after the
/// CLI lesson; C after the whole-plan lesson (which skips the second turn).
pub fn main_script() -> Vec<Item> {
    let pending_tests = "tests/test_parse.py::test_sum_skips_header";
    let all = [1, 2, USER_CLI, USER_BLANK];
    let not_c = [2, USER_BLANK];
    vec![
        turn("`tally sum --header data/sales.csv` crashes with decimal.InvalidOperation when the CSV has a header row. Can you find and fix it?"),
        step(
            Some("The user reports a crash in `tally sum --header`. First I need the lay of the land: where parsing lives and how tests are run."),
            "I'll start by looking at the project layout.",
            vec![shell("ls -R tally tests", "tally:\n__init__.py\ncli.py\nparse.py\n\ntests:\nconftest.py\ntest_cli.py\ntest_parse.py\n", 0)],
        ),
        step(None, "Let me read the CLI entry point.", vec![read_file("tally/cli.py", CLI_PY)]),
        step(
            Some("cli.py hands the file to read_rows and sums with column_total. The header handling must be in parse.py."),
            "Now the parser.",
            vec![read_file("tally/parse.py", PARSE_PY)],
        )
        .label("read_parse")
        .gate(&not_c, &[]),
        step(
            Some("`next(reader, None)` runs after `list(reader)` has consumed everything, so the header row is never skipped and Decimal('amount') blows up. Let me confirm with the tests before touching anything."),
            "Found a suspicious ordering in read_rows. Running the test suite to confirm.",
            vec![shell("python -m pytest -q", PYTEST_HEADER_FAIL, 1)],
        )
        .gate(&not_c, &[]),
        step(
            Some(&format!("{pending_tests} fails exactly as expected. Before editing, I want to know who else calls read_rows so the fix doesn't break a caller; a subagent can look while I plan the edit.")),
            "The failing test confirms it. I'll have a subagent check the other callers of read_rows.",
            vec![ToolSpec::Subagent(explore_subagent())],
        )
        .gate(&not_c, &[]),
        // Path A: fix only parse.py, then find the CLI bug the hard way.
        step(
            Some("Move the header skip before the rows are materialised."),
            "Fixing the order in read_rows.",
            vec![str_replace("tally/parse.py", HEADER_SKIP_OLD, HEADER_SKIP_NEW)],
        )
        .label("fix_parse")
        .gate(&all, &[]),
        step(None, "Running the tests again.", vec![shell("python -m pytest -q", PYTEST_CLI_FAIL, 1)])
            .gate(&all, &[]),
        step(
            Some("The parse test passes now but test_cli_sum_header fails: cli.py passes `header=`. The subagent told me that already and I ignored it. Rather than pile another fix on top, I'll tell my past self, and say what is already on disk: going back rewinds the conversation, not the files."),
            "I should have fixed both call sites together. Sending a note back to before the first edit.",
            vec![dmail(1, "fix_parse", DMAIL_1)],
        )
        .gate(&all, &[]),
        // Path B, taught by own D-Mail 1: parse.py is fixed on disk already.
        step(
            Some("The D-Mail says tally/parse.py is already fixed on disk (the revert only rewound this conversation) and that cli.py still passes `header=`. I'll check parse.py instead of editing it twice, then fix the call."),
            "Checking that the parse.py fix is already on disk.",
            vec![read_file("tally/parse.py", PARSE_PY_FIXED)],
        )
        .gate(&not_c, &[1]),
        step(
            None,
            "It is. Now the keyword in the CLI call.",
            vec![fix_cli_keyword()],
        )
        .gate(&not_c, &[1]),
        step(None, "Running the tests once.", vec![shell("python -m pytest -q", PYTEST_ALL_7, 0)])
            .gate(&not_c, &[1]),
        step(None, FIXED_ANSWER, vec![]).gate(&not_c, &[1]),
        // Path B', taught by a user's D-Mail about cli.py: both edits at once.
        step(
            Some("The D-Mail says cli.py is broken too: it passes `header=` where read_rows takes `skip_header`. Both edits first, then one test run."),
            "Fixing the header skip in read_rows.",
            vec![str_replace("tally/parse.py", HEADER_SKIP_OLD, HEADER_SKIP_NEW)],
        )
        .gate(&[1, 2, USER_BLANK], &[USER_CLI]),
        step(
            None,
            "And the keyword in the CLI call.",
            vec![fix_cli_keyword()],
        )
        .gate(&[1, 2, USER_BLANK], &[USER_CLI]),
        step(None, "Running the tests.", vec![shell("python -m pytest -q", PYTEST_ALL_7, 0)])
            .gate(&[1, 2, USER_BLANK], &[USER_CLI]),
        step(None, FIXED_ANSWER, vec![]).gate(&[1, 2, USER_BLANK], &[USER_CLI]),
        // Path C, taught by own D-Mail 2: most of it is on disk already.
        step(
            Some("My future self sent the whole plan, and most of it is on disk already: the header fix, the skip_header= call and tests/test_skip_blank.py. Only the blank-row filter and the CLI flag are missing. I'll read parse.py as it is now, then finish in one pass."),
            "Reading tally/parse.py as it is on disk now.",
            vec![read_file("tally/parse.py", PARSE_PY_PARTIAL)],
        )
        .gate(&[], &[2]),
        step(
            None,
            "Making skip_blank do its job.",
            vec![str_replace(
                "tally/parse.py",
                "        rows = list(reader)\n    return rows\n",
                "        rows = list(reader)\n    if skip_blank:\n        rows = [row for row in rows if any(cell.strip() for cell in row)]\n    return rows\n",
            )],
        )
        .gate(&[], &[2]),
        step(
            None,
            "Adding `--skip-blank` to the CLI and passing it through.",
            vec![str_replace(
                "tally/cli.py",
                "    args = parser.parse_args(argv)\n    rows = read_rows(args.file, skip_header=args.header)\n",
                "    total.add_argument(\"--skip-blank\", action=\"store_true\")\n    args = parser.parse_args(argv)\n    rows = read_rows(args.file, skip_header=args.header, skip_blank=args.skip_blank)\n",
            )],
        )
        .gate(&[], &[2]),
        step(None, "Running the whole suite once.", vec![shell("python -m pytest -q", PYTEST_ALL_9, 0)])
            .gate(&[], &[2]),
        step(None, ONE_PASS_ANSWER, vec![]).gate(&[], &[2]),
        // Path C', taught by a user's D-Mail asking for blank rows up front.
        step(
            Some("The D-Mail asks for a --skip-blank option as well as the header fix. One pass: read_rows, the CLI, a test, then the suite."),
            "Rewriting read_rows: header skip first, optional blank-row filter.",
            vec![str_replace(
                "tally/parse.py",
                "def read_rows(path, skip_header=False):\n    with open(path, newline=\"\") as f:\n        reader = csv.reader(f)\n        rows = list(reader)\n        if skip_header:\n            next(reader, None)\n    return rows\n",
                "def read_rows(path, skip_header=False, skip_blank=False):\n    with open(path, newline=\"\") as f:\n        reader = csv.reader(f)\n        if skip_header:\n            next(reader, None)\n        rows = list(reader)\n    if skip_blank:\n        rows = [row for row in rows if any(cell.strip() for cell in row)]\n    return rows\n",
            )],
        )
        .gate(&[2], &[USER_BLANK]),
        step(
            None,
            "Updating the CLI: correct keyword and the new flag.",
            vec![str_replace(
                "tally/cli.py",
                "    args = parser.parse_args(argv)\n    rows = read_rows(args.file, header=args.header)\n",
                "    total.add_argument(\"--skip-blank\", action=\"store_true\")\n    args = parser.parse_args(argv)\n    rows = read_rows(args.file, skip_header=args.header, skip_blank=args.skip_blank)\n",
            )],
        )
        .gate(&[2], &[USER_BLANK]),
        step(None, "Adding a test for --skip-blank.", vec![write_file("tests/test_skip_blank.py", TEST_SKIP_BLANK_PY)])
            .gate(&[2], &[USER_BLANK]),
        step(None, "Running the whole suite once.", vec![shell("python -m pytest -q", PYTEST_ALL_9, 0)])
            .gate(&[2], &[USER_BLANK]),
        step(None, ONE_PASS_ANSWER, vec![]).gate(&[2], &[USER_BLANK]),
        // The second request, unless path C already did it.
        turn("Thanks! Could you also add a `--skip-blank` option that drops rows where every cell is empty, with a test?").gate(&not_c, &[]),
        step(None, "Let me look at the existing parse tests first.", vec![read_file("tests/test_parse.py", TEST_PARSE_PY)])
            .gate(&not_c, &[]),
        step(
            Some("read_rows gets a skip_blank flag; a row is blank when every cell is whitespace."),
            "Adding `skip_blank` to read_rows.",
            vec![str_replace(
                "tally/parse.py",
                "def read_rows(path, skip_header=False):",
                "def read_rows(path, skip_header=False, skip_blank=False):",
            )],
        )
        .gate(&not_c, &[]),
        step(None, "Now a test for it.", vec![write_file("tests/test_skip_blank.py", TEST_SKIP_BLANK_PY)])
            .gate(&not_c, &[]),
        step(None, "Running the tests.", vec![shell("python -m pytest -q", "........F                                                                [100%]\nFAILED tests/test_skip_blank.py::test_skip_blank - SystemExit: 2 (tally: error: unrecognized arguments: --skip-blank)\n1 failed, 8 passed in 0.10s\n", 1)])
            .gate(&not_c, &[]),
        step(
            Some("The CLI doesn't know --skip-blank yet, and the parse.py body still ignores the flag. This is the third round of patch-and-retest on the same two files. Everything I know now fits in one note, with what is already on disk; I'll send it back to before I first read parse.py, so one clean pass does the whole job."),
            "This keeps growing in small patches. Sending myself the whole plan from the start.",
            vec![dmail(2, "read_parse", DMAIL_2)],
        )
        .gate(&not_c, &[]),
        turn("Great. Please add a short example for `--header` and `--skip-blank` to the README."),
        step(None, "Reading the README.", vec![read_file("README.md", README_MD)]),
        step(
            None,
            "Adding the examples.",
            vec![str_replace(
                "README.md",
                "    tally sum data.csv --column 2\n",
                "    tally sum data.csv --column 2\n    tally sum sales.csv --header          # first row is a header\n    tally sum gaps.csv --skip-blank       # ignore empty rows\n",
            )],
        ),
        item(ItemKind::Epilogue),
    ]
}
