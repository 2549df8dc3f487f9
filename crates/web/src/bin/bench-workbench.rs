//! Page times of the workbench on a large project: a golden set of 5,000 cases, a corpus of
//! 100,000 chunks, an audit of 2,000 claims and a history of 2,000 recorded runs (synthetic,
//! seeded). The newest `--full-runs` runs are real exams of the whole golden set; the older
//! ones are written through the history's store directly (`record_many`, one transaction),
//! copies of a real run cut to `--old-cases` cases, spread over `--configs` golden sets.
//! Serves the project on a loopback port and times each page over plain HTTP (median, p95
//! and worst of `--repeat` requests), including the two writes (a case saved, a verdict
//! appended). Prints the figures; docs/benchmarks.md keeps them.
//!
//! cargo run --release -p veredicto-web --bin bench-workbench -- [--cases 5000]
//!     [--chunks 100000] [--claims 2000] [--runs 2000] [--full-runs 20] [--old-cases 50]
//!     [--configs 40] [--repeat 20] [--probe]
//!
//! `--probe` also times, once, each step of a run's report (reading the runs, the
//! comparison, the diagnosis, the HTML).
#![allow(clippy::print_stdout)]

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::time::Instant;

use veredicto_app::{ExamRequest, Recording};

/// A small deterministic generator (xorshift64*).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

const WORDS: &[&str] = &[
    "vacaciones",
    "nómina",
    "contrato",
    "despido",
    "preaviso",
    "jornada",
    "salario",
    "convenio",
    "permiso",
    "baja",
    "incapacidad",
    "horas",
    "extra",
    "dietas",
    "viaje",
    "retención",
    "irpf",
    "autónomos",
    "cuota",
    "modelo",
    "trimestre",
    "factura",
    "gasto",
    "deducción",
    "empresa",
    "trabajador",
    "días",
    "naturales",
    "hábiles",
    "plazo",
    "solicitud",
    "registro",
    "firma",
    "grupo",
    "categoría",
    "antigüedad",
    "paga",
    "extraordinaria",
    "teletrabajo",
    "formación",
];

fn sentence(rng: &mut Rng, n: usize) -> String {
    (0..n)
        .map(|_| WORDS[rng.below(WORDS.len())])
        .collect::<Vec<_>>()
        .join(" ")
}

fn arg(args: &[String], name: &str, default: usize) -> usize {
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn request(
    addr: &str,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> (u16, String) {
    let mut s = std::net::TcpStream::connect(addr).expect("connect");
    let mut req = format!(
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nContent-Length: {}\r\nContent-Type: application/x-www-form-urlencoded\r\n",
        body.len()
    );
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    req.push_str("\r\n");
    req.push_str(body);
    s.write_all(req.as_bytes()).expect("write");
    let mut out = String::new();
    s.read_to_string(&mut out).expect("read");
    let status = out.get(9..12).and_then(|c| c.parse().ok()).unwrap_or(0);
    (status, out)
}

fn attr<'a>(html: &'a str, name: &str) -> &'a str {
    let key = format!("name=\"{name}\" value=\"");
    let at = html.find(&key).expect("attribute") + key.len();
    &html[at..at + html[at..].find('"').expect("quote")]
}

/// Median, p95 (nearest rank) and worst of `repeat` timings of `f`, in milliseconds.
fn time(repeat: usize, mut f: impl FnMut(usize)) -> (f64, f64, f64) {
    let mut ms: Vec<f64> = (0..repeat)
        .map(|i| {
            let t = Instant::now();
            f(i);
            t.elapsed().as_secs_f64() * 1e3
        })
        .collect();
    ms.sort_by(f64::total_cmp);
    let p95 = ms[((ms.len() * 95).div_ceil(100)).saturating_sub(1)];
    (ms[ms.len() / 2], p95, ms[ms.len() - 1])
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let (cases, chunks, claims, runs, repeat) = (
        arg(&args, "--cases", 5000),
        arg(&args, "--chunks", 100_000),
        arg(&args, "--claims", 2000),
        arg(&args, "--runs", 2000),
        arg(&args, "--repeat", 20).max(1),
    );
    let full_runs = arg(&args, "--full-runs", 20).clamp(1, runs.max(1));
    let (old_cases, configs) = (
        arg(&args, "--old-cases", 50).max(1),
        arg(&args, "--configs", 40).max(1),
    );
    let dir = tempfile::tempdir()?;
    let d = dir.path();
    let mut rng = Rng(0x7665_7265);
    let setup = Instant::now();
    // The corpus and the golden set.
    let mut corpus = String::new();
    for i in 0..chunks {
        corpus.push_str(&serde_json::to_string(&serde_json::json!({
            "id": format!("c{i:06}"), "text": sentence(&mut rng, 40),
            "domain": "laboral", "batch": format!("b{}", i % 7),
        }))?);
        corpus.push('\n');
    }
    std::fs::write(d.join("corpus.jsonl"), &corpus)?;
    let mut golden = String::new();
    let mut run = String::new();
    for i in 0..cases {
        let expected = [rng.below(chunks), rng.below(chunks)];
        golden.push_str(&serde_json::to_string(&serde_json::json!({
            "id": format!("q{i:05}"), "query": sentence(&mut rng, 8),
            "expected": expected.iter().map(|e| format!("c{e:06}")).collect::<Vec<_>>(),
        }))?);
        golden.push('\n');
        for r in 0..10 {
            let id = if r == 0 {
                expected[0]
            } else {
                rng.below(chunks)
            };
            run.push_str(&format!(
                "q{i:05} Q0 c{id:06} {} {:.4} bench\n",
                r + 1,
                1.0 - r as f64 * 0.05
            ));
        }
    }
    std::fs::write(d.join("golden.jsonl"), &golden)?;
    std::fs::write(d.join("run.trec"), &run)?;
    // The audit: one case per four claims, each claim citing one passage.
    let mut set = Vec::new();
    for i in 0..claims.div_ceil(4) {
        let passage = sentence(&mut rng, 30);
        let claim_list: Vec<serde_json::Value> = (0..4)
            .map(|j| serde_json::json!({"id": format!("C-{i}-{j}"), "text": sentence(&mut rng, 8), "citations": ["S1"]}))
            .collect();
        set.push(serde_json::json!({
            "id": format!("Q-{i}"), "query": sentence(&mut rng, 8), "snapshot": "bench",
            "sources": [{"id": "S1", "version": "v1", "passages": [{"id": "p1", "text": passage}]}],
            "retrieval": [{"position": 1, "source": "S1", "passage": "p1"}],
            "answers": [{"id": format!("A-{i}"), "text": format!("{}. {}.", sentence(&mut rng, 10), sentence(&mut rng, 10)),
                "citations": [{"id": "S1", "source": "S1", "passage": "p1"}], "claims": claim_list}],
        }));
    }
    std::fs::write(
        d.join("claims.json"),
        serde_json::to_string(
            &serde_json::json!({"schema": "veredicto-grounding/1", "cases": set}),
        )?,
    )?;
    // The history: `runs` exams of the run file.
    let history = d.join("history.db").display().to_string();
    let loaded = veredicto_app::golden::load(
        &d.join("golden.jsonl"),
        None,
        None,
        veredicto_app::Events::silent(),
    )?;
    let opened = veredicto_app::retriever::open(
        &format!("run:{}", d.join("run.trec").display()),
        &[],
        &Default::default(),
    )?;
    let policy = veredicto_core::policy::Policy::default();
    let exam = |history: &str, r: usize| {
        veredicto_app::run_exam(ExamRequest {
            retriever: opened.retriever.as_ref(),
            embedder: None,
            cases: &loaded.cases,
            policy: &policy,
            corpus: None,
            corpus_fingerprint: None,
            notes: &BTreeMap::new(),
            as_of: "2026-01-01",
            settings: Default::default(),
            rerank_spec: None,
            fusion: None,
            check_vectors: None,
            timings: false,
            record: Some(Recording {
                history,
                label: Some(format!("bench-{r}")),
                created_at: format!(
                    "2026-01-01T{:02}:{:02}:{:02}Z",
                    r / 3600,
                    r / 60 % 60,
                    r % 60
                ),
                tool_version: "bench".into(),
                git_revision: None,
                chunk_size: None,
                chunk_overlap: None,
                compare: None,
                fail_on_regression: false,
                seed: veredicto_core::compare::DEFAULT_SEED,
            }),
            drafts: Vec::new(),
            events: veredicto_app::Events::silent(),
        })
    };
    // The older runs: one real exam (in a scratch history) copied, cut to `old_cases`
    // cases, over `configs` golden sets, written in one transaction; then the real exams.
    let old = runs - full_runs;
    let written = Instant::now();
    if old > 0 {
        let scratch = d.join("scratch.db").display().to_string();
        exam(&scratch, 0)?;
        let spec = veredicto_app::HistorySpec::default_at(scratch.clone());
        let base = spec.open_read_only()?.get("latest")?;
        let copies: Vec<_> = (0..old)
            .map(|r| {
                let mut run = base.clone();
                run.report.cases.truncate(old_cases);
                let s = &mut run.report.summary;
                s.cases = run.report.cases.len();
                let wobble = (rng.below(1000) as f64 - 500.0) / 10_000.0;
                s.mean_recall = (s.mean_recall + wobble).clamp(0.0, 1.0);
                s.mean_quality = (s.mean_quality + wobble * 100.0).clamp(0.0, 100.0);
                run.meta.golden_fingerprint = format!("sha256:{:064x}", r % configs + 1);
                run.report.golden_fingerprint = run.meta.golden_fingerprint.clone();
                run.meta.id = String::new();
                run.meta.label = Some(format!("old-{r}"));
                run.meta.created_at = format!(
                    "2025-12-{:02}T{:02}:{:02}:00Z",
                    1 + r / 1440 % 28,
                    r / 60 % 24,
                    r % 60
                );
                run
            })
            .collect();
        veredicto_app::HistorySpec::default_at(history.clone())
            .open()?
            .record_many(copies.iter().map(|r| (&r.meta, &r.report)))?;
        std::fs::remove_file(&scratch)?;
    }
    let old_s = written.elapsed().as_secs_f64();
    for r in 0..full_runs {
        exam(&history, r)?;
    }
    println!(
        "project: {cases} cases, {chunks} chunks ({:.1} MB), {claims} claims, {runs} runs ({old} of {old_cases} cases over {configs} golden sets written in {old_s:.1} s, {full_runs} exams of all cases), history {:.1} MB; set up in {:.1} s",
        corpus.len() as f64 / 1e6,
        std::fs::metadata(&history).map(|m| m.len()).unwrap_or(0) as f64 / 1e6,
        setup.elapsed().as_secs_f64()
    );
    if args.iter().any(|a| a == "--probe") {
        // Where a report's time goes: each step the report page takes, timed once.
        let spec = veredicto_app::HistorySpec::default_at(history.clone());
        let h = spec.open_read_only()?;
        let t = Instant::now();
        let current = h.get("latest")?;
        println!(
            "probe: get newest run {:.1} ms",
            t.elapsed().as_secs_f64() * 1e3
        );
        let t = Instant::now();
        let corpus = veredicto_app::golden::load_corpus(
            &d.join("corpus.jsonl"),
            None,
            veredicto_app::Events::silent(),
        )?
        .0;
        println!(
            "probe: read corpus {:.1} ms",
            t.elapsed().as_secs_f64() * 1e3
        );
        let t = Instant::now();
        let base = h.get(
            &h.previous_compatible(&current.meta)?
                .map(|s| s.id)
                .unwrap_or_default(),
        )?;
        println!(
            "probe: get baseline {:.1} ms",
            t.elapsed().as_secs_f64() * 1e3
        );
        let t = Instant::now();
        let c = veredicto_core::compare::compare(
            &base,
            &current,
            &veredicto_core::compare::CompareOptions {
                corpus: Some(&corpus),
                ..Default::default()
            },
        );
        println!("probe: compare {:.1} ms", t.elapsed().as_secs_f64() * 1e3);
        let t = Instant::now();
        let runs = veredicto_app::history::recent_runs(&h, &current, 20)?;
        println!(
            "probe: 20 recent runs {:.1} ms",
            t.elapsed().as_secs_f64() * 1e3
        );
        let t = Instant::now();
        let chunks = veredicto_app::history::baseline_chunks(&h, &runs)?;
        println!(
            "probe: baseline chunks {:.1} ms",
            t.elapsed().as_secs_f64() * 1e3
        );
        let t = Instant::now();
        let diag = veredicto_core::compare::diagnose_runs_with_chunks(
            &runs,
            Some(&corpus),
            chunks.as_ref(),
            &Default::default(),
        );
        println!(
            "probe: diagnose runs {:.1} ms",
            t.elapsed().as_secs_f64() * 1e3
        );
        let t = Instant::now();
        let html = veredicto_report::html::render(&veredicto_report::html::HtmlInput {
            current: &current,
            baseline_comparison: Some(&c),
            diagnosis: Some(&diag),
            history: &runs,
        });
        println!(
            "probe: render {:.1} ms ({} bytes)",
            t.elapsed().as_secs_f64() * 1e3,
            html.len()
        );
    }
    let bound = veredicto_web::bind(
        "127.0.0.1",
        0,
        veredicto_web::Config {
            golden: d.join("golden.jsonl"),
            corpus: Some(d.join("corpus.jsonl")),
            token: None,
            identity_header: Some("x-reviewer".into()),
            documents: None,
            signals: None,
            history: veredicto_app::HistorySpec::default_at(history.clone()),
            clock: || "2026-01-02T00:00:00Z".to_owned(),
            audit: Some(d.join("claims.json").display().to_string()),
            exam: None,
        },
    )?;
    let addr = bound
        .url()
        .trim_start_matches("http://")
        .trim_end_matches('/')
        .to_owned();
    std::thread::spawn(move || bound.serve());
    let origin = format!("http://{addr}");
    let me = [("x-reviewer", "bench"), ("Origin", origin.as_str())];
    let get = |path: &str| {
        let (st, page) = request(&addr, "GET", path, &me, "");
        assert_eq!(st, 200, "{path}: {page}");
        page
    };
    let csrf = attr(&get("/golden/new?id=x&query=vacaciones"), "csrf").to_owned();
    let mut rows: Vec<(String, (f64, f64, f64))> = Vec::new();
    let mut measure = |what: &str, f: &mut dyn FnMut(usize)| {
        let t = time(repeat, f);
        println!(
            "{what:<58} median {:>8.1} ms   p95 {:>8.1} ms   worst {:>8.1} ms",
            t.0, t.1, t.2
        );
        rows.push((what.to_owned(), t));
    };
    measure(
        "golden set, first page (100 of the cases, last results)",
        &mut |_| {
            get("/golden");
        },
    );
    measure("golden set, last page", &mut |_| {
        get(&format!("/golden?offset={}", cases.saturating_sub(100)));
    });
    measure("a case's page (its line, fields, evidence)", &mut |i| {
        get(&format!("/golden/case?id=q{:05}", (i * 97) % cases));
    });
    measure(
        "new question: search the corpus (20 best chunks)",
        &mut |i| {
            get(&format!(
                "/golden/new?id=x&query={}+{}+plazo",
                WORDS[i % WORDS.len()],
                WORDS[(i * 7) % WORDS.len()]
            ));
        },
    );
    measure(
        "save a case (append to the golden file, log line)",
        &mut |i| {
            let page = get("/golden/new?id=x&query=vacaciones");
            let hash: String =
                form_urlencoded::byte_serialize(attr(&page, "hash").as_bytes()).collect();
            let (st, _) = request(
                &addr,
                "POST",
                "/golden/add",
                &me,
                &format!("csrf={csrf}&hash={hash}&id=new{i}&query=vacaciones&expected=c000001"),
            );
            assert_eq!(st, 303);
        },
    );
    measure("claims queue (all claims, agreement panel)", &mut |_| {
        get("/claims?show=all");
    });
    measure("a claim card", &mut |i| {
        get(&format!("/claims/C-{}-1", (i * 37) % claims.div_ceil(4)));
    });
    measure("append a verdict (then the next claim's page)", &mut |i| {
        let (st, _) = request(
            &addr,
            "POST",
            &format!("/claims/C-{i}-0/review"),
            &me,
            &format!("csrf={csrf}&support=supported&reason=bench"),
        );
        assert_eq!(st, 303);
    });
    measure("runs list (newest 200)", &mut |_| {
        get("/runs");
    });
    measure("trends per configuration (first 10)", &mut |_| {
        get("/runs/trends");
    });
    // The full runs (all cases), newest first: each visited once, then one again.
    let full: Vec<String> = veredicto_app::workbench::recent(
        &veredicto_app::HistorySpec::default_at(history.clone()),
        full_runs,
    )?
    .into_iter()
    .map(|r| r.id)
    .collect();
    measure(
        &format!("a run's report, first visit ({cases} cases, 20 runs of trends)"),
        &mut |i| {
            get(&format!("/runs/{}", full[i % full.len()]));
        },
    );
    measure(
        &format!("a run's report, visited again ({cases} cases)"),
        &mut |_| {
            get(&format!("/runs/{}", full[0]));
        },
    );
    measure(
        "compare a run with the previous one, first visit",
        &mut |i| {
            get(&format!(
                "/runs/compare?new={}",
                full[i % (full.len() - 1).max(1)]
            ));
        },
    );
    measure("compare a run with the previous one, again", &mut |_| {
        get(&format!("/runs/compare?new={}", full[1 % full.len()]));
    });
    measure("a failing case's ranked list", &mut |_| {
        get("/runs/latest/cases/q00001");
    });
    println!("\n| page | median ms | p95 ms | worst ms |\n|---|---:|---:|---:|");
    for (what, (m, p, w)) in &rows {
        println!("| {what} | {m:.1} | {p:.1} | {w:.1} |");
    }
    Ok(())
}
