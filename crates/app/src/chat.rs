//! Asking a chat model for drafts and suggestions (a model suggests, a person decides):
//! the versioned prompts shipped in `crates/app/prompts/`, the reply cache of the project,
//! the token counts and the estimated cost of a command.
//!
//! Every request is sent with temperature 0 and a seed. A reply is cached under the SHA-256
//! of (prompt hash, model, input hash), one file per key, written to a temp file and
//! renamed: a second run of the same command sends nothing and gives the same output. A
//! reply that is not the JSON asked for is asked again once, with what was wrong with it;
//! a second unreadable reply is reported with its start, never guessed, and never cached.

use std::path::PathBuf;
use std::sync::Mutex;
use std::time::Duration;

use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use veredicto_embed::{ChatClient, ChatConfig, Deadline, JsonSchema, Usage};

use crate::Result;

/// A prompt of the repository: its name (with its version) and its words.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Prompt {
    /// `golden-draft-v1`: changing a word of the prompt means a new name.
    pub name: &'static str,
    /// The system message, word for word.
    pub text: &'static str,
}

impl Prompt {
    /// The SHA-256 of the prompt's words (64 hex digits).
    pub fn sha256(&self) -> String {
        hex(&Sha256::digest(self.text.as_bytes()))
    }

    /// `golden-draft-v1 sha256:<first 16 hex>`: recorded with everything it produced.
    pub fn fingerprint(&self) -> String {
        format!("{} sha256:{}", self.name, &self.sha256()[..16])
    }
}

/// The prompt of `golden draft`.
pub const GOLDEN_DRAFT: Prompt = Prompt {
    name: "golden-draft-v1",
    text: include_str!("../prompts/golden-draft-v1.txt"),
};

/// The prompt of `judge` (relevance of an outranking chunk, UMBRELA-style).
pub const RELEVANCE: Prompt = Prompt {
    name: "relevance-v1",
    text: include_str!("../prompts/relevance-v1.txt"),
};

/// Whether the reply's JSON schema is sent as `response_format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SchemaMode {
    /// Sent; a server that refuses it is asked again without it (the prompt asks for JSON).
    #[default]
    Auto,
    /// Sent; a server that refuses it is an error.
    On,
    /// Never sent: the prompt alone asks for JSON.
    Off,
}

impl std::str::FromStr for SchemaMode {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<SchemaMode, String> {
        match s {
            "auto" => Ok(SchemaMode::Auto),
            "on" => Ok(SchemaMode::On),
            "off" => Ok(SchemaMode::Off),
            other => Err(format!("`{other}` is not auto, on or off")),
        }
    }
}

/// The chat server and how it is asked.
#[derive(Clone)]
pub struct ChatSettings {
    /// The server (`http://host:port`, `.../v1` or the full `/chat/completions` URL).
    pub url: String,
    /// The `model` asked for.
    pub model: String,
    /// The API key (sent as a Bearer token), already read by the caller. Never printed.
    pub api_key: Option<String>,
    /// The seed sent with every request.
    pub seed: u64,
    /// Timeout of one request.
    pub timeout: Duration,
    /// Retries after a 429 (honouring `Retry-After`), a 5xx or a timeout.
    pub retries: u32,
    /// When every request of the command must have ended, from its start.
    pub deadline: Duration,
    /// Whether the JSON schema is sent as `response_format`.
    pub schema: SchemaMode,
    /// The price of 1,000 tokens, for the estimated cost (none when `None`).
    pub price_per_1k: Option<f64>,
    /// The cache folder (`.veredicto/chat-cache` of the project); `None`: no cache.
    pub cache: Option<PathBuf>,
    /// Longest reply, in tokens.
    pub max_tokens: u32,
}

impl std::fmt::Debug for ChatSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChatSettings")
            .field("url", &veredicto_core::redact::url(&self.url))
            .field("model", &self.model)
            .field("api_key", &self.api_key.as_ref().map(|_| "…"))
            .field("seed", &self.seed)
            .field("schema", &self.schema)
            .field("cache", &self.cache)
            .finish_non_exhaustive()
    }
}

impl ChatSettings {
    /// Defaults: seed 0, 120 s per request, 4 retries, 30 minutes in all, the schema sent
    /// (with the fallback), no price, no cache, 1,024 tokens per reply.
    pub fn new(url: impl Into<String>, model: impl Into<String>) -> ChatSettings {
        ChatSettings {
            url: url.into(),
            model: model.into(),
            api_key: None,
            seed: 0,
            timeout: Duration::from_secs(120),
            retries: 4,
            deadline: Duration::from_secs(30 * 60),
            schema: SchemaMode::Auto,
            price_per_1k: None,
            cache: None,
            max_tokens: 1024,
        }
    }
}

/// What a command's requests cost.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Tally {
    /// Replies asked for (cached ones included).
    pub asked: u64,
    /// Replies read from the cache (no request sent).
    pub cached: u64,
    /// Requests sent (retries after an unreadable reply included).
    pub sent: u64,
    /// Token counts of the requests sent, summed.
    pub usage: Usage,
    /// Requests whose JSON schema the server refused (asked again with the prompt alone).
    pub fallbacks: u64,
    /// The price of 1,000 tokens, when given.
    pub price_per_1k: Option<f64>,
}

impl Tally {
    /// The estimated cost of the requests sent, when a price was given.
    pub fn cost(&self) -> Option<f64> {
        self.price_per_1k
            .map(|p| p * self.usage.total() as f64 / 1000.0)
    }
}

impl std::fmt::Display for Tally {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "chat: {} repl{} ({} from the cache), {} request(s) sent, {} token(s) ({} prompt, {} completion)",
            self.asked,
            if self.asked == 1 { "y" } else { "ies" },
            self.cached,
            self.sent,
            self.usage.total(),
            self.usage.prompt_tokens,
            self.usage.completion_tokens
        )?;
        if let (Some(cost), Some(p)) = (self.cost(), self.price_per_1k) {
            write!(f, ", estimated cost {cost:.4} (at {p} per 1,000 tokens)")?;
        }
        if self.fallbacks > 0 {
            write!(
                f,
                "; the server refused the JSON schema {} time(s): the prompt alone asked for JSON",
                self.fallbacks
            )?;
        }
        Ok(())
    }
}

/// A reply read as asked, with where it came from.
#[derive(Debug, Clone, PartialEq)]
pub struct Answer<T> {
    /// The reply, read.
    pub value: T,
    /// The model the server says answered (the one asked for when it does not say).
    pub model: String,
    /// `sha256:<hex>` of the user message: the input's fingerprint.
    pub input: String,
    /// Whether it came from the cache.
    pub cached: bool,
}

/// One client, its cache and its tally, for one command.
pub struct Asker {
    client: ChatClient,
    settings: ChatSettings,
    tally: Mutex<Tally>,
}

impl std::fmt::Debug for Asker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Asker")
            .field("settings", &self.settings)
            .finish_non_exhaustive()
    }
}

/// The first ~200 characters of a reply, for a message.
pub fn excerpt(reply: &str) -> String {
    veredicto_core::redact::short(reply.trim())
}

/// The JSON object in a reply (a Markdown code fence around it tolerated), or what is
/// wrong with it, quoting its start.
pub fn json_object(reply: &str) -> std::result::Result<serde_json::Map<String, Value>, String> {
    let (Some(start), Some(end)) = (reply.find('{'), reply.rfind('}')) else {
        return Err(format!("no JSON object in the reply: {:?}", excerpt(reply)));
    };
    if end < start {
        return Err(format!("no JSON object in the reply: {:?}", excerpt(reply)));
    }
    match serde_json::from_str::<Value>(&reply[start..=end]) {
        Ok(Value::Object(o)) => Ok(o),
        Ok(_) => Err(format!(
            "the reply is not a JSON object: {:?}",
            excerpt(reply)
        )),
        Err(e) => Err(format!(
            "the reply's JSON does not parse ({e}): {:?}",
            excerpt(reply)
        )),
    }
}

impl Asker {
    /// A client for `settings`; the deadline starts now. Nothing is sent yet.
    pub fn new(settings: ChatSettings) -> Result<Asker> {
        let mut cfg = ChatConfig::new(&settings.url, settings.model.clone());
        cfg.api_key = settings.api_key.clone();
        cfg.seed = Some(settings.seed);
        cfg.timeout = settings.timeout;
        cfg.retries = settings.retries;
        cfg.max_tokens = settings.max_tokens;
        cfg.deadline = Some(Deadline::after(settings.deadline));
        let client = ChatClient::new(cfg)?;
        let tally = Mutex::new(Tally {
            price_per_1k: settings.price_per_1k,
            ..Tally::default()
        });
        Ok(Asker {
            client,
            settings,
            tally,
        })
    }

    /// The model asked for.
    pub fn model(&self) -> &str {
        &self.settings.model
    }

    /// The server, without credentials.
    pub fn url(&self) -> &str {
        self.client.url()
    }

    /// What the command's requests cost so far.
    pub fn tally(&self) -> Tally {
        *self.tally.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn cache_file(&self, prompt: &Prompt, input: &str) -> Option<PathBuf> {
        let dir = self.settings.cache.as_ref()?;
        let key = hex(&Sha256::digest(
            format!("{}\n{}\n{}", prompt.sha256(), self.settings.model, input).as_bytes(),
        ));
        Some(dir.join(format!("{key}.json")))
    }

    /// Asks `prompt` with the user message `user` and reads the reply with `read`: from
    /// the cache when it holds a readable reply for (prompt, model, input), else from the
    /// server, asked again once when the reply cannot be read. `Ok(Err(why))`: the second
    /// reply could not be read either (`why` quotes its start).
    pub fn ask<T>(
        &self,
        prompt: &Prompt,
        user: &str,
        schema: &JsonSchema,
        read: impl Fn(&str) -> std::result::Result<T, String>,
    ) -> Result<std::result::Result<Answer<T>, String>> {
        let input = format!("sha256:{}", hex(&Sha256::digest(user.as_bytes())));
        let file = self.cache_file(prompt, &input);
        self.count(|t| t.asked += 1);
        if let Some(f) = &file {
            if let Some((content, model)) = read_cached(f) {
                if let Ok(value) = read(&content) {
                    self.count(|t| t.cached += 1);
                    return Ok(Ok(Answer {
                        value,
                        model,
                        input,
                        cached: true,
                    }));
                }
            }
        }
        let mut message = user.to_owned();
        let mut last = String::new();
        for attempt in 0..2 {
            let reply = self.send(prompt, &message, schema)?;
            match read(&reply.content) {
                Ok(value) => {
                    let model = reply
                        .model
                        .clone()
                        .unwrap_or_else(|| self.settings.model.clone());
                    if let Some(f) = &file {
                        write_cached(f, prompt, &self.settings.model, &input, &reply)?;
                    }
                    return Ok(Ok(Answer {
                        value,
                        model,
                        input,
                        cached: false,
                    }));
                }
                Err(why) => {
                    last = why;
                    if attempt == 0 {
                        message = format!(
                            "{user}\n\nYour previous reply could not be read ({}). Reply with the JSON object only.",
                            veredicto_core::redact::short(&last)
                        );
                    }
                }
            }
        }
        Ok(Err(format!("{last} (asked twice)")))
    }

    fn send(
        &self,
        prompt: &Prompt,
        user: &str,
        schema: &JsonSchema,
    ) -> Result<veredicto_embed::ChatReply> {
        let reply = match self.settings.schema {
            SchemaMode::Off => self.client.complete(prompt.text, user)?,
            SchemaMode::On => {
                let r = self.client.complete_json(prompt.text, user, schema)?;
                if !r.schema {
                    crate::bail!(
                        "{}: the server refused the JSON schema (response_format); ask with --json-schema auto or off",
                        self.client.url()
                    );
                }
                r
            }
            SchemaMode::Auto => self.client.complete_json(prompt.text, user, schema)?,
        };
        let fell_back = self.settings.schema != SchemaMode::Off && !reply.schema;
        self.count(|t| {
            // A refused schema costs a request of its own.
            t.sent += if fell_back { 2 } else { 1 };
            t.fallbacks += u64::from(fell_back);
            if let Some(u) = reply.usage {
                t.usage.prompt_tokens += u.prompt_tokens;
                t.usage.completion_tokens += u.completion_tokens;
            }
        });
        Ok(reply)
    }

    fn count(&self, f: impl FnOnce(&mut Tally)) {
        f(&mut self.tally.lock().unwrap_or_else(|p| p.into_inner()));
    }
}

/// A cached reply's content and model; `None` when absent or unreadable (then asked anew).
fn read_cached(path: &std::path::Path) -> Option<(String, String)> {
    let bytes = std::fs::read(path).ok()?;
    if bytes.len() > MAX_CACHED {
        return None;
    }
    let v: Value = serde_json::from_slice(&bytes).ok()?;
    Some((
        v["content"].as_str()?.to_owned(),
        v["reply_model"].as_str()?.to_owned(),
    ))
}

/// Largest cache file read (a reply is far smaller).
const MAX_CACHED: usize = 4 << 20;

fn write_cached(
    path: &std::path::Path,
    prompt: &Prompt,
    model: &str,
    input: &str,
    reply: &veredicto_embed::ChatReply,
) -> Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)
            .map_err(|e| crate::Error::Message(format!("{}: {e}", dir.display())))?;
    }
    let record = json!({
        "prompt": prompt.fingerprint(),
        "prompt_sha256": prompt.sha256(),
        "model": model,
        "input": input,
        "content": reply.content,
        "reply_model": reply.model.clone().unwrap_or_else(|| model.to_owned()),
        "usage": reply.usage.map(|u| json!({"prompt_tokens": u.prompt_tokens, "completion_tokens": u.completion_tokens})),
    });
    crate::files::write_atomic(path, serde_json::to_string_pretty(&record)?.as_bytes())
        .map_err(|e| crate::Error::Message(format!("{}: {e}", path.display())))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prompts_are_fingerprinted() {
        let f = GOLDEN_DRAFT.fingerprint();
        assert!(f.starts_with("golden-draft-v1 sha256:"), "{f}");
        assert_eq!(f.len(), "golden-draft-v1 sha256:".len() + 16);
        assert_ne!(GOLDEN_DRAFT.sha256(), RELEVANCE.sha256());
    }

    #[test]
    fn reads_the_object_or_says_what_is_wrong() {
        assert!(json_object("```json\n{\"a\": 1}\n```").is_ok());
        for bad in ["nothing here", "{\"a\": ", "} {"] {
            let e = json_object(bad).unwrap_err();
            assert!(e.contains("reply"), "{e}");
        }
        let long = format!("{{ {} ", "x".repeat(1000));
        assert!(json_object(&long).unwrap_err().len() < 400);
    }

    #[test]
    fn the_tally_says_tokens_and_cost() {
        let t = Tally {
            asked: 3,
            cached: 1,
            sent: 2,
            usage: Usage {
                prompt_tokens: 900,
                completion_tokens: 100,
            },
            fallbacks: 0,
            price_per_1k: Some(0.5),
        };
        assert_eq!(
            t.to_string(),
            "chat: 3 replies (1 from the cache), 2 request(s) sent, 1000 token(s) (900 prompt, 100 completion), estimated cost 0.5000 (at 0.5 per 1,000 tokens)"
        );
    }
}
