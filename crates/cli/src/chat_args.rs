//! The chat-model options of `golden draft` and `judge`, resolved into
//! `veredicto_app::chat::ChatSettings` (the API key read from the variable named here).

use anyhow::Context;
use std::time::Duration;
use veredicto_app::chat::{ChatSettings, SchemaMode};

#[derive(Debug, Clone, clap::Args)]
pub struct ChatArgs {
    /// The OpenAI-compatible chat server (`http://host:port`, `.../v1` or the full
    /// `/chat/completions` URL).
    #[arg(long, value_name = "URL")]
    pub chat: Option<String>,
    /// The `model` asked for.
    #[arg(long, value_name = "NAME", default_value = "gpt-4o-mini")]
    pub model: String,
    /// Environment variable holding the server's API key (sent as a Bearer token).
    #[arg(long, value_name = "VAR")]
    pub api_key_env: Option<String>,
    /// Seed sent with every request (temperature is always 0).
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Timeout of one request, in seconds.
    #[arg(long, value_name = "SECS", default_value_t = 120)]
    pub timeout: u64,
    /// Retries after a 429 (honouring `Retry-After`), a 5xx or a timeout.
    #[arg(long, default_value_t = 4)]
    pub retries: u32,
    /// When every request of the command must have ended, in seconds from its start.
    #[arg(long, value_name = "SECS", default_value_t = 1800)]
    pub deadline: u64,
    /// Send the reply's JSON schema as `response_format`: `auto` (sent; when the server
    /// refuses it, asked again with the prompt alone), `on` (a refusal is an error), `off`.
    #[arg(long, value_name = "auto|on|off", default_value = "auto")]
    pub json_schema: SchemaMode,
    /// Price of 1,000 tokens, for the estimated cost printed on standard error.
    #[arg(long, value_name = "PRICE")]
    pub price_per_1k_tokens: Option<f64>,
    /// Ask the server even when the reply cache (`.veredicto/chat-cache`) holds the reply.
    #[arg(long)]
    pub no_cache: bool,
}

impl ChatArgs {
    pub fn settings(&self, s: &veredicto_app::Settings) -> anyhow::Result<ChatSettings> {
        let Some(url) = &self.chat else {
            anyhow::bail!("give --chat URL (an OpenAI-compatible chat server)");
        };
        let api_key = match &self.api_key_env {
            Some(var) => Some(
                s.env
                    .get(var)
                    .with_context(|| format!("--api-key-env {var}: the variable is not set"))?,
            ),
            None => None,
        };
        if let Some(p) = self.price_per_1k_tokens {
            anyhow::ensure!(
                p.is_finite() && p >= 0.0,
                "--price-per-1k-tokens must be a number of at least 0, got {p}"
            );
        }
        let root = s.root.clone().unwrap_or_else(|| s.cwd.clone());
        Ok(ChatSettings {
            api_key,
            seed: self.seed,
            timeout: Duration::from_secs(self.timeout.max(1)),
            retries: self.retries,
            deadline: Duration::from_secs(self.deadline.max(1)),
            schema: self.json_schema,
            price_per_1k: self.price_per_1k_tokens,
            cache: (!self.no_cache).then(|| root.join(".veredicto/chat-cache")),
            ..ChatSettings::new(url, &self.model)
        })
    }
}
