#!/usr/bin/env python3
"""The logic of veredicto's GitHub Action (action.yml), in one stdlib-only script so that the
test suite runs it locally with a fake `gh` and a local git remote (no GitHub needed).

Subcommands:
  history-pull  copy the run history from a git branch (none yet: a new history starts)
  history-push  commit the run history to that branch (plumbing only: the work tree is never
                touched); when someone else pushed first, merge our runs into theirs with
                `veredicto history migrate` (runs keep their IDs) and push again
  cap           the pull-request comment: a marker, the Markdown capped under GitHub's
                65,536-character limit, a link to the full HTML report
  comment       post the comment, or update the one posted before (one sticky comment)
  annotate      `::error file=GOLDEN,line=N::` for each failing case of the exam JSON
  gate          the job's exit: 0 accept, 1 stop, 2 the exam could not run
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile

MARKER = "<!-- veredicto-exam-comment -->"
# GitHub refuses comment bodies over 65,536 characters; stay clearly under it.
COMMENT_LIMIT = 65_000
HISTORY_FILE = "history.db"


def git(*args, check=True, capture=True, env=None):
    return subprocess.run(
        ["git", *args],
        check=check,
        stdout=subprocess.PIPE if capture else None,
        stderr=subprocess.PIPE if capture else None,
        env=env,
    )


def remote_tip(remote, branch):
    """The commit the remote branch points at, or None when the branch does not exist."""
    r = git("fetch", "--quiet", remote, f"+refs/heads/{branch}:refs/veredicto/{branch}", check=False)
    if r.returncode != 0:
        return None
    return git("rev-parse", f"refs/veredicto/{branch}").stdout.decode().strip()


def read_history(commit, dest):
    blob = git("show", f"{commit}:{HISTORY_FILE}").stdout
    os.makedirs(os.path.dirname(os.path.abspath(dest)), exist_ok=True)
    tmp = dest + ".part"
    with open(tmp, "wb") as f:
        f.write(blob)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, dest)


def tip_file(history):
    """Where the commit a history was pulled from is noted (push merges when it moved)."""
    return history + ".tip"


def history_pull(a):
    tip = remote_tip(a.remote, a.branch)
    os.makedirs(os.path.dirname(os.path.abspath(a.dest)), exist_ok=True)
    with open(tip_file(a.dest), "w", encoding="utf-8") as f:
        f.write(tip or "")
    if tip is None:
        print(f"veredicto-action: no branch {a.branch} yet: the history starts here")
        return 0
    read_history(tip, a.dest)
    print(f"veredicto-action: history from {a.branch} ({tip[:12]}) at {a.dest}")
    return 0


def commit_env():
    env = dict(os.environ)
    for k, v in [
        ("GIT_AUTHOR_NAME", "veredicto"),
        ("GIT_AUTHOR_EMAIL", "veredicto@users.noreply.github.com"),
        ("GIT_COMMITTER_NAME", "veredicto"),
        ("GIT_COMMITTER_EMAIL", "veredicto@users.noreply.github.com"),
    ]:
        env.setdefault(k, v)
    return env


def make_commit(src, parent, message):
    blob = git("hash-object", "-w", "--", src).stdout.decode().strip()
    tree = (
        subprocess.run(
            ["git", "mktree"],
            input=f"100644 blob {blob}\t{HISTORY_FILE}\n".encode(),
            check=True,
            stdout=subprocess.PIPE,
        )
        .stdout.decode()
        .strip()
    )
    args = ["commit-tree", tree, "-m", message]
    if parent:
        args += ["-p", parent]
    return git(*args, env=commit_env()).stdout.decode().strip()


def history_push(a):
    if not os.path.isfile(a.src):
        print(f"veredicto-action: no history at {a.src}: nothing to keep")
        return 0
    src = a.src
    base = None
    if os.path.isfile(tip_file(a.src)):
        with open(tip_file(a.src), encoding="utf-8") as f:
            base = f.read().strip() or None
    work = tempfile.mkdtemp(prefix="veredicto-history-")
    for attempt in range(1, a.attempts + 1):
        tip = remote_tip(a.remote, a.branch)
        if tip is not None and tip != base:
            # Someone pushed since we pulled: their history plus our runs.
            theirs = os.path.join(work, f"theirs-{attempt}.db")
            read_history(tip, theirs)
            subprocess.run(
                [a.veredicto, "history", "migrate", "--from", src, "--to", theirs],
                check=True,
            )
            src = theirs
            print(f"veredicto-action: {a.branch} moved since the pull: our runs joined {tip[:12]}")
        base = tip
        commit = make_commit(src, tip, a.message)
        r = git("push", "--quiet", a.remote, f"{commit}:refs/heads/{a.branch}", check=False)
        if r.returncode == 0:
            print(f"veredicto-action: history kept on {a.branch} ({commit[:12]})")
            return 0
        why = (r.stderr or b"").decode(errors="replace").strip().splitlines()
        print(
            f"veredicto-action: push to {a.branch} refused (attempt {attempt}): "
            + (why[-1] if why else "no reason given"),
            file=sys.stderr,
        )
    print(f"veredicto-action: could not keep the history on {a.branch}", file=sys.stderr)
    return 2


def cap_comment(markdown, link, limit=COMMENT_LIMIT):
    """The comment body: marker, Markdown (cut at a line end when too long), link."""
    footer = "\n\n"
    if link:
        footer += f"Full report (HTML): [veredicto report]({link})\n"
    head = MARKER + "\n"
    room = limit - len(head) - len(footer)
    if len(markdown) > room:
        note = "\n\n… {} characters cut to fit a comment; the full report is in the HTML artifact.\n"
        keep = room - len(note.format(len(markdown)))
        cut = markdown.rfind("\n", 0, keep)
        if cut <= 0:
            cut = keep
        markdown = markdown[:cut] + note.format(len(markdown) - cut)
    body = head + markdown.rstrip("\n") + footer
    assert len(body) <= limit
    return body


def cap(a):
    with open(a.input, encoding="utf-8") as f:
        markdown = f.read()
    body = cap_comment(markdown, a.link, a.limit)
    with open(a.out, "w", encoding="utf-8") as f:
        f.write(body)
    print(f"veredicto-action: comment of {len(body)} characters")
    return 0


def gh_json(*args):
    r = subprocess.run(["gh", *args], check=True, stdout=subprocess.PIPE)
    text = r.stdout.decode().strip()
    if not text:
        return []
    # `--paginate` concatenates one JSON array per page.
    out = []
    decoder = json.JSONDecoder()
    i = 0
    while i < len(text):
        value, i = decoder.raw_decode(text, i)
        out.extend(value if isinstance(value, list) else [value])
        while i < len(text) and text[i].isspace():
            i += 1
    return out


def comment(a):
    existing = [
        c
        for c in gh_json("api", "--paginate", f"repos/{a.repo}/issues/{a.pr}/comments")
        if MARKER in (c.get("body") or "")
    ]
    if existing:
        cid = existing[0]["id"]
        subprocess.run(
            ["gh", "api", "-X", "PATCH", f"repos/{a.repo}/issues/comments/{cid}",
             "-F", f"body=@{a.body}"],
            check=True,
            stdout=subprocess.DEVNULL,
        )
        print(f"veredicto-action: updated comment {cid}")
    else:
        subprocess.run(
            ["gh", "api", "-X", "POST", f"repos/{a.repo}/issues/{a.pr}/comments",
             "-F", f"body=@{a.body}"],
            check=True,
            stdout=subprocess.DEVNULL,
        )
        print("veredicto-action: posted the comment")
    return 0


def escape_data(s):
    return s.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(s):
    return escape_data(s).replace(":", "%3A").replace(",", "%2C")


def golden_lines(golden):
    """(file, {case id: 1-based line}) of a JSONL golden set or a BEIR folder's queries."""
    path = golden
    key = "id"
    if os.path.isdir(golden):
        path = os.path.join(golden, "queries.jsonl")
        key = "_id"
    lines = {}
    with open(path, encoding="utf-8-sig") as f:
        for n, line in enumerate(f, 1):
            line = line.strip()
            if not line:
                continue
            try:
                obj = json.loads(line)
            except ValueError:
                continue
            cid = obj.get(key, obj.get("id")) if isinstance(obj, dict) else None
            if isinstance(cid, (str, int)):
                lines.setdefault(str(cid), n)
    return path, lines


def annotations(report, golden, limit=50):
    path, lines = golden_lines(golden)
    out = []
    failing = [c for c in report.get("cases", []) if not c.get("passed", True)]
    for c in failing[:limit]:
        cid = str(c.get("id"))
        reasons = ", ".join(c.get("reasons", [])) or "failed"
        recall = c.get("recall")
        detail = f"{reasons}; recall {recall * 100:.1f}%" if isinstance(recall, (int, float)) else reasons
        if c.get("gold"):
            detail += "; gold case"
        missing = [e["id"] for e in c.get("expected", []) if not e.get("in_top_k")]
        if missing:
            detail += "; not in the top-K: " + ", ".join(missing[:5])
        props = f"file={escape_property(path)}"
        if cid in lines:
            props += f",line={lines[cid]}"
        props += f",title={escape_property('veredicto: case ' + cid + ' fails')}"
        out.append(f"::error {props}::{escape_data(detail)}")
    if len(failing) > limit:
        out.append(f"::warning::{len(failing) - limit} more failing cases: see the report")
    return out


def annotate(a):
    with open(a.exam, encoding="utf-8") as f:
        report = json.load(f)
    for line in annotations(report, a.golden, a.limit):
        print(line)
    return 0


def gate(a):
    code = int(a.code)
    if code == 0:
        print("veredicto: accept")
        return 0
    if code == 1:
        print("::error::veredicto: stop: do not deploy this knowledge base (see the comment and the report)")
        return 1
    print(f"::error::veredicto: the exam could not run (exit {code}); see the log")
    return 2


def main(argv=None):
    p = argparse.ArgumentParser(prog="veredicto_action.py")
    sub = p.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("history-pull")
    s.add_argument("--remote", default="origin")
    s.add_argument("--branch", default="veredicto-history")
    s.add_argument("--dest", required=True)
    s.set_defaults(fn=history_pull)
    s = sub.add_parser("history-push")
    s.add_argument("--remote", default="origin")
    s.add_argument("--branch", default="veredicto-history")
    s.add_argument("--src", required=True)
    s.add_argument("--message", default="veredicto: run history")
    s.add_argument("--veredicto", default="veredicto")
    s.add_argument("--attempts", type=int, default=3)
    s.set_defaults(fn=history_push)
    s = sub.add_parser("cap")
    s.add_argument("--in", dest="input", required=True)
    s.add_argument("--out", required=True)
    s.add_argument("--link", default="")
    s.add_argument("--limit", type=int, default=COMMENT_LIMIT)
    s.set_defaults(fn=cap)
    s = sub.add_parser("comment")
    s.add_argument("--repo", required=True)
    s.add_argument("--pr", required=True)
    s.add_argument("--body", required=True)
    s.set_defaults(fn=comment)
    s = sub.add_parser("annotate")
    s.add_argument("--exam", required=True)
    s.add_argument("--golden", required=True)
    s.add_argument("--limit", type=int, default=50)
    s.set_defaults(fn=annotate)
    s = sub.add_parser("gate")
    s.add_argument("--code", required=True)
    s.set_defaults(fn=gate)
    a = p.parse_args(argv)
    return a.fn(a)


if __name__ == "__main__":
    sys.exit(main())
