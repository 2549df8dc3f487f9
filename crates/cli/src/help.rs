//! The end of each command's help: the retriever schemes (for the commands that take a
//! retriever), then two or three examples that work as written (files named as in the
//! first-hour guide: `golden.jsonl`, `corpus.jsonl`, `.veredicto/index`…). Each example fits
//! in 98 columns so that the help never wraps it.

/// The heading of the options every command takes (`--color`, `--quiet`, `--verbose`).
pub const GLOBAL: &str = "Global options";

/// The heading that ends every command's help; a test checks each command has it.
pub const EXAMPLES: &str = "Examples:";

/// The retriever schemes, one line each, for `exam`, `calibrate` and `search`.
fn retrievers() -> String {
    format!(
        "Retrievers (--retriever URI; see docs/retrievers.md):\n{}",
        veredicto_retrieve::schemes_help()
    )
}

fn examples(lines: &[&str]) -> String {
    let mut out = format!("{EXAMPLES}\n");
    for l in lines {
        out.push_str("  ");
        out.push_str(l);
        out.push('\n');
    }
    out
}

fn with_retrievers(lines: &[&str]) -> String {
    format!("{}\n{}", retrievers(), examples(lines))
}

pub fn init() -> String {
    examples(&[
        "veredicto init                    # write veredicto.toml, say what to run next",
        "veredicto init --force            # rewrite it",
    ])
}

pub fn exam() -> String {
    with_retrievers(&[
        "veredicto exam --golden golden.jsonl --run run.trec --no-record",
        "veredicto exam --index .veredicto/index --golden golden.jsonl --policy policy.toml --compare",
        "veredicto exam --golden golden.jsonl --retriever 'cmd:python3 search.py' --json",
    ])
}

pub fn calibrate() -> String {
    with_retrievers(&[
        "veredicto calibrate --golden golden.jsonl --run run.trec --out policy.toml",
        "veredicto calibrate --index .veredicto/index --golden golden.jsonl",
    ])
}

pub fn ingest() -> String {
    examples(&[
        "veredicto ingest --corpus corpus.jsonl --index .veredicto/index --model multilingual-e5-small",
        "veredicto ingest --corpus corpus.jsonl --index .veredicto/index      # again: only what changed",
    ])
}

pub fn index() -> String {
    examples(&[
        "veredicto index verify .veredicto/index",
        "veredicto index verify .veredicto/index --json",
    ])
}

pub fn search() -> String {
    with_retrievers(&[
        "veredicto search --index .veredicto/index \"plazo de devolución\" -k 5",
        "veredicto search --retriever qdrant+http://localhost:6333/chunks \"plazo\" --json",
    ])
}

pub fn trec() -> String {
    examples(&[
        "veredicto trec qrels.txt run.trec",
        "veredicto trec -q -m ndcg_cut.10 qrels.txt run.trec",
        "veredicto trec --list",
    ])
}

pub fn runs() -> String {
    examples(&[
        "veredicto runs list --verdict stop",
        "veredicto runs show latest --json",
    ])
}

pub fn compare() -> String {
    examples(&[
        "veredicto compare                                  # the latest run against its baseline",
        "veredicto compare --baseline last-accepted --markdown",
    ])
}

pub fn report() -> String {
    examples(&[
        "veredicto report latest --out report.html",
        "veredicto report latest --format junit --out junit.xml",
    ])
}

pub fn audit() -> String {
    examples(&[
        "veredicto audit check examples/grounding/p7.yaml",
        "run=$(veredicto audit record examples/grounding/q017.yaml)",
        "veredicto audit package latest --out audit.tar.gz && veredicto audit verify audit.tar.gz",
    ])
}

pub fn history() -> String {
    examples(&[
        "veredicto history check",
        "veredicto history migrate --from .veredicto/history.db --to postgres://ci@db.internal/veredicto",
    ])
}

pub fn models() -> String {
    examples(&[
        "veredicto models list",
        "veredicto models fetch multilingual-e5-small",
    ])
}

pub fn completions() -> String {
    examples(&[
        "veredicto completions bash > ~/.local/share/bash-completion/completions/veredicto",
        "veredicto completions zsh > ~/.zfunc/_veredicto",
    ])
}

pub fn gate() -> String {
    examples(&[
        "veredicto gate --index .veredicto/index --policy policy.toml",
        "veredicto gate accept --index .veredicto/index --reason \"export bug in the CMS, ticket 412\"",
    ])
}

pub fn matrix() -> String {
    examples(&[
        "veredicto matrix --config matrix.toml",
        "veredicto matrix --config matrix.toml --no-record --format json",
    ])
}

pub fn signals() -> String {
    examples(&[
        "veredicto signals import examples/rack/signals-log.jsonl",
        "veredicto signals candidates --golden golden.jsonl --corpus corpus.jsonl --out candidates.jsonl",
    ])
}

pub fn corpus() -> String {
    examples(&[
        "veredicto corpus check --corpus examples/rack/corpus.jsonl",
        "veredicto corpus check --index .veredicto/index --policy policy.toml",
    ])
}

pub fn golden() -> String {
    examples(&[
        "veredicto golden check --golden golden.jsonl --corpus corpus.jsonl --documents docs.jsonl",
        "veredicto golden convert --golden golden.jsonl --corpus corpus.jsonl --out evidence.jsonl",
        "veredicto golden draft --corpus corpus.jsonl --chat http://127.0.0.1:8080 --out drafts.jsonl",
    ])
}

pub fn audit_extract() -> String {
    examples(&[
        "veredicto audit extract q017.yaml --chat http://127.0.0.1:8080 --out claims.jsonl",
        "veredicto audit extract latest --chat https://api.openai.com/v1 --api-key-env KEY --out c.jsonl",
    ])
}

pub fn judge() -> String {
    examples(&[
        "veredicto judge --chat http://127.0.0.1:8080 --run latest",
        "veredicto judge --chat https://api.openai.com/v1 --api-key-env OPENAI_API_KEY --run 01JD4X",
        "veredicto judge --agreement --golden golden.jsonl",
    ])
}

pub fn golden_draft() -> String {
    examples(&[
        "veredicto golden draft --corpus corpus.jsonl --chat http://127.0.0.1:8080 --out drafts.jsonl",
        "veredicto golden draft --chat https://api.openai.com/v1 --api-key-env OPENAI_KEY --out d.jsonl",
        "veredicto golden draft --chat URL --out d.jsonl --per-domain 5 --limit 40 --json-schema off",
    ])
}

pub fn golden_accept() -> String {
    examples(&[
        "veredicto golden accept d-3f2a9c1b7e4d --drafts drafts.jsonl --reason 'quote checked'",
        "veredicto golden accept d-3f2a9c1b7e4d --drafts d.jsonl --reason 'both needed' --reviewer ana",
    ])
}

pub fn golden_reject() -> String {
    examples(&[
        "veredicto golden reject d-3f2a9c1b7e4d --drafts drafts.jsonl --reason 'nobody asks this'",
        "veredicto golden reject d-91c07b2e5a13 --drafts drafts.jsonl --reason 'the quote is a title'",
    ])
}

pub fn embed() -> String {
    examples(&[
        "veredicto embed --corpus corpus.jsonl --out vectors.parquet --model all-minilm-l6-v2",
        "veredicto embed --golden golden.jsonl --out queries.npy",
        "veredicto embed --corpus corpus.jsonl --to 'postgres://app@db:5432/rag?table=chunks'",
    ])
}

pub fn chunk() -> String {
    examples(&[
        "veredicto chunk --documents docs.jsonl --out corpus.jsonl --size 512 --overlap 64",
        "veredicto chunk --documents docs.jsonl --out corpus.jsonl --size 400 --split sentences",
    ])
}

pub fn serve() -> String {
    examples(&[
        "veredicto serve",
        "veredicto serve --port 0 --audit cases.yaml",
        "veredicto serve --host 0.0.0.0 --port 8765 --token \"$(openssl rand -hex 16)\"",
    ])
}

pub fn tune() -> String {
    examples(&[
        "veredicto tune --retriever fusion:rrf --arm 'index:kb?mode=bm25' --arm index:kb --grid k=30,60",
        "veredicto tune --retriever fusion:wsum --arm run:bm25.trec --arm index:kb --grid w=0.3:0.9:0.1",
        "veredicto tune --golden golden.jsonl --grid k=10,30,60 --holdout 0.3 --write-policy policy.toml",
    ])
}
