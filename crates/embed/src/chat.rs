//! [`ChatClient`]: the OpenAI `/v1/chat/completions` contract (OpenAI, vLLM, Ollama,
//! llama.cpp server, ...), used to ask a model acting as a judge. Deterministic settings:
//! temperature 0 and, when given, a fixed seed; the caller owns the prompt.

use std::time::Duration;

use serde_json::{json, Value};

use crate::http::{HttpClient, HttpSettings};
use crate::EmbedError;

/// Settings of a [`ChatClient`]. The API key is passed in (the CLI reads it from an
/// environment variable; this library reads none).
#[derive(Clone)]
pub struct ChatConfig {
    /// The server: `http://host:port`, `.../v1` or the full `.../v1/chat/completions` URL.
    pub base_url: String,
    /// The `model` field sent with every request.
    pub model: String,
    /// Sent as `Authorization: Bearer <key>` when given.
    pub api_key: Option<String>,
    /// Timeout of one request. Default 120 s.
    pub timeout: Duration,
    /// Retries after a 429, a 5xx or a timeout (never after a refused connection). Default 4.
    pub retries: u32,
    /// First wait between attempts, doubled each retry. Default 500 ms.
    pub backoff: Duration,
    /// Sent as `seed` when given (servers that honour it repeat their answers).
    pub seed: Option<u64>,
    /// Longest answer, in tokens (`max_tokens`). Default 512.
    pub max_tokens: u32,
    /// HTTP proxy URL (no proxy when `None`).
    pub proxy: Option<String>,
    /// A PEM file of root certificates trusted besides the system's (`--ca-file`).
    pub ca_file: Option<std::path::PathBuf>,
    /// When every request of the command must have ended (no deadline when `None`).
    pub deadline: Option<crate::http::Deadline>,
}

/// Without the key, and the URLs without credentials.
impl std::fmt::Debug for ChatConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChatConfig")
            .field("base_url", &veredicto_core::redact::url(&self.base_url))
            .field("model", &self.model)
            .field(
                "api_key",
                &self
                    .api_key
                    .as_ref()
                    .map(|_| veredicto_core::redact::REDACTED),
            )
            .field("timeout", &self.timeout)
            .field("retries", &self.retries)
            .field("seed", &self.seed)
            .field(
                "proxy",
                &self.proxy.as_deref().map(veredicto_core::redact::url),
            )
            .field("ca_file", &self.ca_file)
            .finish_non_exhaustive()
    }
}

impl ChatConfig {
    /// Defaults for `base_url` and `model`.
    pub fn new(base_url: impl Into<String>, model: impl Into<String>) -> Self {
        ChatConfig {
            base_url: base_url.into(),
            model: model.into(),
            api_key: None,
            timeout: Duration::from_secs(120),
            retries: 4,
            backoff: Duration::from_millis(500),
            seed: Some(0),
            max_tokens: 512,
            proxy: None,
            ca_file: None,
            deadline: None,
        }
    }

    /// The endpoint: `base_url` itself when it ends in `/chat/completions`, else
    /// `base_url + "/chat/completions"` when it ends in `/v1`, else
    /// `base_url + "/v1/chat/completions"`.
    pub fn endpoint(&self) -> String {
        crate::http::openai_endpoint(&self.base_url, "chat/completions")
    }
}

/// One completed exchange.
#[derive(Clone, Debug, PartialEq)]
pub struct ChatReply {
    /// The assistant message's text.
    pub content: String,
    /// The `model` the server says answered (may differ from the one asked for).
    pub model: Option<String>,
    /// The reply's `usage`, when the server gave it.
    pub usage: Option<Usage>,
    /// Whether the request carried a JSON-schema `response_format` the server accepted
    /// (`false`: none was asked for, or the server refused it and the plain prompt was
    /// sent again).
    pub schema: bool,
}

/// Token counts of one exchange, as the reply's `usage` gives them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Usage {
    /// `usage.prompt_tokens`.
    pub prompt_tokens: u64,
    /// `usage.completion_tokens`.
    pub completion_tokens: u64,
}

impl Usage {
    /// Both counts.
    pub fn total(&self) -> u64 {
        self.prompt_tokens + self.completion_tokens
    }
}

/// A JSON schema the reply must follow, sent as the OpenAI `response_format`
/// (`{"type": "json_schema", "json_schema": {"name", "strict": true, "schema"}}`).
#[derive(Clone, Debug, PartialEq)]
pub struct JsonSchema {
    /// The schema's `name` (letters, digits, `_`, `-`).
    pub name: String,
    /// The schema itself.
    pub schema: Value,
}

/// Whether a refusal of the request names its `response_format`: a 400 or 422 whose body
/// mentions `response_format` or `json_schema` (what OpenAI-compatible servers that do not
/// support structured outputs answer).
fn refuses_schema(e: &EmbedError) -> bool {
    match e {
        EmbedError::HttpStatus {
            status: 400 | 422,
            body,
            ..
        } => {
            let b = body.to_ascii_lowercase();
            b.contains("response_format") || b.contains("json_schema")
        }
        _ => false,
    }
}

/// A client of an OpenAI-compatible chat completions server.
pub struct ChatClient {
    cfg: ChatConfig,
    /// Where requests go (may carry credentials).
    endpoint: String,
    /// The endpoint without credentials, for messages and records.
    url: String,
    client: HttpClient,
}

impl std::fmt::Debug for ChatClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChatClient")
            .field("url", &self.url)
            .field("model", &self.cfg.model)
            .finish_non_exhaustive()
    }
}

impl ChatClient {
    /// A client for `cfg`; nothing is sent until [`ChatClient::complete`].
    pub fn new(cfg: ChatConfig) -> Result<Self, EmbedError> {
        let client = HttpClient::new(HttpSettings {
            timeout: cfg.timeout,
            retries: cfg.retries,
            backoff: cfg.backoff,
            api_key: cfg.api_key.clone(),
            proxy: cfg.proxy.clone(),
            ca_file: cfg.ca_file.clone(),
            deadline: cfg.deadline,
        })?;
        let endpoint = cfg.endpoint();
        Ok(ChatClient {
            url: veredicto_core::redact::url(&endpoint),
            endpoint,
            cfg,
            client,
        })
    }

    /// The endpoint URL requests go to, without credentials (userinfo, secret parameters).
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The model asked for.
    pub fn model(&self) -> &str {
        &self.cfg.model
    }

    /// Sends a system and a user message with temperature 0 and returns the first choice.
    pub fn complete(&self, system: &str, user: &str) -> Result<ChatReply, EmbedError> {
        self.send(system, user, None)
    }

    /// Like [`ChatClient::complete`], asking for a reply that follows `schema` (the
    /// `response_format` of OpenAI's structured outputs). A server that refuses the
    /// `response_format` (a 400 or 422 naming it) is asked once more without it: the
    /// prompt, which asks for JSON in words, is then all the model has
    /// ([`ChatReply::schema`] is `false`). The caller checks the reply either way.
    pub fn complete_json(
        &self,
        system: &str,
        user: &str,
        schema: &JsonSchema,
    ) -> Result<ChatReply, EmbedError> {
        match self.send(system, user, Some(schema)) {
            Err(e) if refuses_schema(&e) => self.send(system, user, None),
            other => other,
        }
    }

    /// The request body of one exchange: the model, the two messages, temperature 0, the
    /// longest answer, the seed when set and the `response_format` when asked for.
    pub fn body(&self, system: &str, user: &str, schema: Option<&JsonSchema>) -> Value {
        let mut body = json!({
            "model": self.cfg.model,
            "messages": [
                {"role": "system", "content": system},
                {"role": "user", "content": user},
            ],
            "temperature": 0,
            "max_tokens": self.cfg.max_tokens,
        });
        if let Some(seed) = self.cfg.seed {
            body["seed"] = json!(seed);
        }
        if let Some(s) = schema {
            body["response_format"] = json!({
                "type": "json_schema",
                "json_schema": {"name": s.name, "strict": true, "schema": s.schema},
            });
        }
        body
    }

    fn send(
        &self,
        system: &str,
        user: &str,
        schema: Option<&JsonSchema>,
    ) -> Result<ChatReply, EmbedError> {
        let body = self.body(system, user, schema);
        let resp = self.client.post_json(&self.endpoint, &body)?;
        let bad = |reason: String| EmbedError::BadResponse {
            url: self.url.clone(),
            reason,
        };
        let content = resp
            .get("choices")
            .and_then(Value::as_array)
            .and_then(|c| c.first())
            .and_then(|c| c.get("message"))
            .and_then(|m| m.get("content"))
            .and_then(Value::as_str)
            .ok_or_else(|| bad("no `choices[0].message.content` string".into()))?;
        let usage = resp.get("usage").map(|u| Usage {
            prompt_tokens: u.get("prompt_tokens").and_then(Value::as_u64).unwrap_or(0),
            completion_tokens: u
                .get("completion_tokens")
                .and_then(Value::as_u64)
                .unwrap_or(0),
        });
        Ok(ChatReply {
            content: content.to_string(),
            model: resp
                .get("model")
                .and_then(Value::as_str)
                .map(str::to_string),
            usage,
            schema: schema.is_some(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::ChatConfig;

    #[test]
    fn endpoint_from_any_base() {
        for (base, want) in [
            ("http://h:1", "http://h:1/v1/chat/completions"),
            ("http://h:1/", "http://h:1/v1/chat/completions"),
            ("http://h:1/v1", "http://h:1/v1/chat/completions"),
            (
                "http://h:1/v1/chat/completions",
                "http://h:1/v1/chat/completions",
            ),
            (
                "http://h:1/openai/v1/",
                "http://h:1/openai/v1/chat/completions",
            ),
        ] {
            assert_eq!(ChatConfig::new(base, "m").endpoint(), want, "{base}");
        }
    }
}
