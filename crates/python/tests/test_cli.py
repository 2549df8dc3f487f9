"""The wheel's `veredicto` command is the Rust command line."""

from __future__ import annotations

import shutil
import subprocess


def test_the_command_runs_the_rack_exam(rack):
    exe = shutil.which("veredicto")
    assert exe, "the wheel installs a veredicto command"
    stop = subprocess.run(
        [exe, "exam", "--golden", str(rack / "golden.jsonl"), "--run", str(rack / "run-stop.trec"),
         "--corpus", str(rack / "corpus.jsonl"), "--policy", str(rack / "policy.toml"),
         "--no-record", "--color", "never"],
        capture_output=True, text=True,
    )
    assert stop.returncode == 1, stop.stderr
    assert "verdict: STOP" in stop.stdout
    accept = subprocess.run(
        [exe, "exam", "--golden", str(rack / "golden.jsonl"), "--run", str(rack / "run-accept.trec"),
         "--corpus", str(rack / "corpus.jsonl"), "--policy", str(rack / "policy.toml"),
         "--no-record"],
        capture_output=True, text=True,
    )
    assert accept.returncode == 0, accept.stderr
    assert "verdict: ACCEPT" in accept.stdout


def test_bad_input_exits_2(tmp_path):
    golden = tmp_path / "g.jsonl"
    golden.write_text("{not json\n")
    out = subprocess.run(["veredicto", "exam", "--golden", str(golden), "--run", "x.trec",
                          "--no-record"], capture_output=True, text=True)
    assert out.returncode == 2
    assert str(golden) in out.stderr


def test_models_list_and_version():
    out = subprocess.run(["veredicto", "models", "list"], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert "all-MiniLM-L6-v2" in out.stdout or "MiniLM" in out.stdout
    v = subprocess.run(["veredicto", "--version"], capture_output=True, text=True)
    assert v.returncode == 0 and v.stdout.startswith("veredicto ")
