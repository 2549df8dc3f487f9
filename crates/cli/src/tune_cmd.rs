//! `veredicto tune`: sweeps a fusion's parameters on a training part of the golden set and
//! reports on the held-out part (or k folds); `--write-policy` declares the chosen stage in
//! a policy file.

use crate::printer::ExitStatus;
use std::path::PathBuf;
use veredicto_core::tune::{GridParam, Objective, Split};

#[derive(Debug, clap::Args)]
pub struct TuneArgs {
    /// Golden set: JSONL cases, or a BEIR folder. Default: `golden` of veredicto.toml.
    #[arg(long, value_name = "GOLDEN")]
    pub golden: Option<PathBuf>,
    /// The fusion whose parameters are swept (`fusion:rrf?k=60`): the current setting, and
    /// the base the grid's values replace. Default: `[source] retriever` of veredicto.toml.
    #[arg(long, value_name = "URI")]
    pub retriever: Option<String>,
    /// An arm of the fusion (repeatable, in order; `run:FILE` for a run file). Default:
    /// `VEREDICTO_ARMS`, else `[retriever] arms` of veredicto.toml.
    #[arg(long = "arm", value_name = "URI")]
    pub arm: Vec<String>,
    /// A parameter swept (repeatable): `k=10,30,60,100` (rrf), `w=0.3:0.9:0.1` (wsum: with
    /// two arms `w=x` weighs them x and 1-x), `norm=min-max,zscore,rank`, `method=rrf,wsum`.
    #[arg(long, value_name = "NAME=VALUES", required = true, value_parser = grid)]
    pub grid: Vec<GridParam>,
    /// k folds: each case is held out once and scored by the setting chosen on the other
    /// folds (the default, with 5 folds).
    #[arg(long, value_name = "N", conflicts_with = "holdout")]
    pub folds: Option<usize>,
    /// Hold out this share of the cases (0 < F < 1): the setting is chosen on the rest.
    #[arg(long, value_name = "F", value_parser = share)]
    pub holdout: Option<f64>,
    /// Seed of the split and of the significance tests.
    #[arg(long, value_name = "N", default_value_t = veredicto_core::compare::DEFAULT_SEED)]
    pub seed: u64,
    /// The per-case score maximised: ndcg, recall, mrr or quality (each at the case's K).
    #[arg(long, value_name = "NAME", default_value = "ndcg", value_parser = objective)]
    pub objective: Objective,
    /// Write the chosen setting into this policy file as its declared fusion stage
    /// (`fusion = "…"`, part of the policy's fingerprint): the exam then refuses a fusion
    /// with other parameters. The file is created when it does not exist.
    #[arg(long, value_name = "FILE")]
    pub write_policy: Option<PathBuf>,
    /// Results asked of each arm per case.
    #[arg(long, value_name = "N", default_value_t = veredicto_retrieve::pass::DEFAULT_DEPTH)]
    pub depth: usize,
    /// Cases sent to an arm at once.
    #[arg(long, value_name = "N", default_value_t = veredicto_retrieve::pass::DEFAULT_CONCURRENCY, value_parser = crate::retriever_args::concurrency)]
    pub concurrency: usize,
    #[command(flatten)]
    pub embedder: crate::models::EmbedderArgs,
    #[command(flatten)]
    pub net: crate::retriever_args::NetArgs,
    /// Policy TOML (each case's K); default: the `[policy]` of veredicto.toml, else the
    /// documented defaults.
    #[arg(long, value_name = "POLICY.toml")]
    pub policy: Option<PathBuf>,
    /// Output format.
    #[arg(long, value_parser = crate::printer::formats(&["human", "json"]), default_value = "human")]
    pub format: crate::printer::Format,
    /// Alias of `--format json`.
    #[arg(long)]
    pub json: bool,
}

fn grid(s: &str) -> Result<GridParam, String> {
    veredicto_core::tune::parse_grid(s)
}

fn objective(s: &str) -> Result<Objective, String> {
    s.parse()
}

fn share(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if v > 0.0 && v < 1.0 => Ok(v),
        _ => Err(format!(
            "expected a share between 0 and 1 (0.3), got `{}`",
            veredicto_core::redact::short(s)
        )),
    }
}

impl TuneArgs {
    /// What the flags say about the shared settings.
    pub fn overrides(&self) -> veredicto_app::Overrides {
        veredicto_app::Overrides {
            golden: self.golden.clone(),
            source: self
                .retriever
                .clone()
                .map(veredicto_formats::config::Source::Retriever),
            policy: self.policy.clone(),
            model: self.embedder.model.clone(),
            arms: Some(self.arm.clone()),
            ..Default::default()
        }
    }
}

pub fn run(args: TuneArgs, settings: &veredicto_app::Settings) -> anyhow::Result<ExitStatus> {
    let golden = match &settings.golden {
        Some(g) => g.clone(),
        None => anyhow::bail!(
            "tune needs a golden set: give --golden FILE, or `golden` in veredicto.toml"
        ),
    };
    let uri = settings.source_uri().unwrap_or_default();
    let Some(base) = uri
        .get(..7)
        .filter(|h| h.eq_ignore_ascii_case("fusion:"))
        .map(|_| uri[7..].to_owned())
    else {
        anyhow::bail!(
            "tune sweeps a fusion: give --retriever 'fusion:rrf' (or combsum, combmnz, combmax, wsum) and its arms with --arm"
        );
    };
    let split = match (args.folds, args.holdout) {
        (_, Some(f)) => Split::Holdout(f),
        (Some(k), None) => Split::Folds(k),
        (None, None) => Split::Folds(5),
    };
    let policy = settings
        .policy_sections(&[veredicto_formats::policy::Section::Exam])?
        .exam;
    let veredicto_app::golden::Loaded { cases, .. } =
        veredicto_app::golden::load(&golden, None, None, crate::printer::events())?;
    let options = args.net.options(&settings.env)?;
    // The fusion opened whole first: its arms' URIs, the vectors it needs and the model
    // of its index are checked as the exam checks them.
    let opened = crate::retriever_args::open_retriever(&uri, &args.arm, settings, &args.net)?;
    let deadline = args.net.total_deadline();
    let embedder = crate::retriever_args::load_embedder(
        opened.retriever.as_ref(),
        opened.index_dir.as_deref(),
        &args.embedder,
        settings,
        &args.net,
        deadline,
        &cases,
        false,
    )?;
    let arms = settings
        .arms
        .iter()
        .map(|a| veredicto_retrieve::open(a, &options).map_err(anyhow::Error::from))
        .collect::<anyhow::Result<Vec<_>>>()?;
    let report = veredicto_app::tune::tune(veredicto_app::tune::TuneRequest {
        base: &base,
        arms: &arms,
        embedder: embedder.as_deref(),
        cases: &cases,
        policy: &policy,
        grid: &args.grid,
        split,
        seed: args.seed,
        objective: args.objective,
        pass: veredicto_retrieve::pass::Settings {
            depth: args.depth,
            concurrency: args.concurrency,
            duplicates: settings.duplicates,
            max_retriever_failures: settings.max_retriever_failures,
            ..Default::default()
        },
        events: crate::printer::events(),
    })?;
    let mut text = if args.format.or_json(args.json) == crate::printer::Format::Json {
        veredicto_report::tune::json(&report)
    } else {
        veredicto_report::tune::human(&report)
    };
    if let Some(path) = &args.write_policy {
        veredicto_app::tune::write_policy(path, &report.chosen)?;
        let line = format!(
            "wrote fusion = \"{}\" into {}: the exam of this policy examines that fusion and refuses another",
            report.chosen,
            path.display()
        );
        if args.format.or_json(args.json) == crate::printer::Format::Json {
            crate::printer::note(&line);
        } else {
            text.push_str(&line);
            text.push('\n');
        }
    }
    crate::printer::stdout(&text)?;
    Ok(ExitStatus::Success)
}
