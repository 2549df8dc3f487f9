//! The embedding, rerank and chat clients' HTTP: veredicto's one JSON-over-HTTP client
//! (`veredicto_net::http`: timeouts, one total deadline, retries on timeouts, 5xx and 429,
//! `Retry-After`, redirects not followed, secrets never printed), its errors mapped to
//! [`EmbedError`].

use std::path::PathBuf;
use std::time::Duration;

use serde_json::Value;
use veredicto_net::{HttpError, Proxy};

use crate::EmbedError;

pub use veredicto_net::Deadline;

/// Settings common to every HTTP client of this crate.
#[derive(Clone, Debug)]
pub(crate) struct HttpSettings {
    pub timeout: Duration,
    pub retries: u32,
    pub backoff: Duration,
    pub api_key: Option<String>,
    pub proxy: Option<String>,
    /// When every request of the run must have ended ([`Deadline`]).
    pub deadline: Option<Deadline>,
    /// Root certificates trusted besides the system's (PEM).
    pub ca_file: Option<PathBuf>,
}

/// Largest response body accepted (embeddings of a large batch).
const MAX_BODY: u64 = 512 << 20;

pub(crate) struct HttpClient {
    inner: veredicto_net::HttpClient,
}

impl HttpClient {
    pub(crate) fn new(settings: HttpSettings) -> Result<Self, EmbedError> {
        let inner = veredicto_net::HttpClient::new(veredicto_net::HttpSettings {
            timeout: settings.timeout,
            retries: settings.retries,
            backoff: settings.backoff,
            deadline: settings.deadline,
            headers: settings
                .api_key
                .iter()
                .map(|key| ("Authorization".to_owned(), format!("Bearer {key}")))
                .collect(),
            proxy: settings.proxy.map_or(Proxy::Off, Proxy::Url),
            max_body: MAX_BODY,
            ca_file: settings.ca_file,
            user_agent: concat!("veredicto-embed/", env!("CARGO_PKG_VERSION")).to_owned(),
        })
        .map_err(map_error)?;
        Ok(HttpClient { inner })
    }

    /// POSTs `body` to `url` and parses the 2xx response as JSON, under the one rule of
    /// `veredicto_net::http`. Credentials in `url` are used, never shown: a `user:pass@`
    /// userinfo is sent as `Authorization: Basic …` (unless an API key is set, whose bearer
    /// token wins); errors name the URL without credentials and echo response bodies with
    /// secrets redacted.
    pub(crate) fn post_json(&self, url: &str, body: &Value) -> Result<Value, EmbedError> {
        self.inner.post_json(url, body).map_err(map_error)
    }
}

fn map_error(e: HttpError) -> EmbedError {
    match e {
        HttpError::Setup { option, reason } => EmbedError::InvalidOption { option, reason },
        HttpError::Status {
            url,
            status,
            attempts,
            body,
        } => EmbedError::HttpStatus {
            url,
            status,
            attempts,
            body,
        },
        HttpError::Redirect {
            url,
            status,
            location,
        } => EmbedError::HttpStatus {
            url,
            status,
            attempts: 1,
            body: format!("redirects to `{location}`; redirects are not followed: use that URL"),
        },
        HttpError::Timeout {
            url,
            timeout_ms,
            attempts,
        } => EmbedError::HttpTimeout {
            url,
            timeout_ms,
            attempts,
        },
        HttpError::Deadline {
            url,
            deadline_ms,
            attempts,
        } => EmbedError::HttpDeadline {
            url,
            deadline_ms,
            attempts,
        },
        HttpError::Transport {
            url,
            attempts,
            reason,
        } => EmbedError::HttpTransport {
            url,
            attempts,
            reason,
        },
        HttpError::Dropped {
            url,
            attempts,
            reason,
        } => EmbedError::HttpTransport {
            url,
            attempts,
            reason,
        },
        HttpError::TooLarge { url, limit } => EmbedError::BadResponse {
            url,
            reason: format!("the answer is larger than {limit} bytes"),
        },
        HttpError::NotJson { url, reason, body } => EmbedError::BadResponse {
            url,
            reason: format!("body is not JSON ({reason}): {body}"),
        },
    }
}

/// An OpenAI-style endpoint from a base URL: `base` itself when its path already ends in
/// `/<path>`, else `base + "/<path>"` when it ends in `/v1`, else `base + "/v1/<path>"`. A
/// query string (`?api-version=…&key=…`) stays after the path; a fragment is dropped.
pub(crate) fn openai_endpoint(base_url: &str, path: &str) -> String {
    let base_url = base_url.split('#').next().unwrap_or("");
    let (base, query) = match base_url.find('?') {
        Some(q) => (&base_url[..q], &base_url[q..]),
        None => (base_url, ""),
    };
    let base = base.trim_end_matches('/');
    if base.ends_with(&format!("/{path}")) {
        format!("{base}{query}")
    } else if base.ends_with("/v1") {
        format!("{base}/{path}{query}")
    } else {
        format!("{base}/v1/{path}{query}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base_url_query_stays_after_the_endpoint_path() {
        assert_eq!(
            openai_endpoint("https://h/openai?api-version=1&key=k", "embeddings"),
            "https://h/openai/v1/embeddings?api-version=1&key=k"
        );
        assert_eq!(
            openai_endpoint("https://h/v1/?key=k", "chat/completions"),
            "https://h/v1/chat/completions?key=k"
        );
        assert_eq!(
            openai_endpoint("https://h/v1/embeddings?key=k", "embeddings"),
            "https://h/v1/embeddings?key=k"
        );
        assert_eq!(
            openai_endpoint("http://h:1", "embeddings"),
            "http://h:1/v1/embeddings"
        );
    }
}
