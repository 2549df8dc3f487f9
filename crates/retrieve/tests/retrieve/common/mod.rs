//! A small HTTP/1.1 server on 127.0.0.1 written for the tests: each connection carries one
//! request (the server answers with `Connection: close`), the handler sees the parsed
//! request and returns a status and a body, or `None` to never answer.

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};

use veredicto_core::case::Case;

/// One request as the server saw it.
#[derive(Debug, Clone)]
pub struct Seen {
    pub path: String,
    pub headers: BTreeMap<String, String>,
    pub body: serde_json::Value,
}

pub type Handler = dyn Fn(&Seen) -> Option<(u16, String)> + Send + Sync;

pub struct Server {
    pub url: String,
    pub seen: Arc<Mutex<Vec<Seen>>>,
}

pub fn serve(handler: Arc<Handler>) -> Server {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let handler = handler.clone();
            let log = log.clone();
            std::thread::spawn(move || {
                let mut reader = BufReader::new(stream.try_clone().unwrap());
                let mut first = String::new();
                if reader.read_line(&mut first).unwrap_or(0) == 0 {
                    return;
                }
                let path = first.split_whitespace().nth(1).unwrap_or("").to_owned();
                let mut headers = BTreeMap::new();
                loop {
                    let mut line = String::new();
                    reader.read_line(&mut line).unwrap();
                    let line = line.trim_end();
                    if line.is_empty() {
                        break;
                    }
                    if let Some((k, v)) = line.split_once(':') {
                        headers.insert(k.trim().to_ascii_lowercase(), v.trim().to_owned());
                    }
                }
                let len: usize = headers
                    .get("content-length")
                    .and_then(|v| v.parse().ok())
                    .unwrap_or(0);
                let mut body = vec![0; len];
                reader.read_exact(&mut body).unwrap();
                let body = serde_json::from_slice(&body).unwrap_or(serde_json::Value::Null);
                let req = Seen {
                    path,
                    headers,
                    body,
                };
                log.lock().unwrap().push(req.clone());
                match handler(&req) {
                    Some((status, text)) => {
                        let _ = write!(
                            stream,
                            "HTTP/1.1 {status} X\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{text}",
                            text.len()
                        );
                    }
                    None => std::thread::sleep(std::time::Duration::from_secs(30)),
                }
            });
        }
    });
    Server { url, seen }
}

pub fn case(id: &str, query: &str, expected: &[&str], vector: Option<Vec<f32>>) -> Case {
    Case {
        id: id.into(),
        query: query.into(),
        expected: expected.iter().map(|s| s.to_string()).collect(),
        grades: Default::default(),
        evidence: Vec::new(),
        top_k: Some(3),
        domain: None,
        tags: vec![],
        gold: false,
        query_vector: vector,
        filters: None,
    }
}

pub fn results(ids: &[&str]) -> String {
    let list: Vec<serde_json::Value> = ids
        .iter()
        .enumerate()
        .map(|(i, id)| serde_json::json!({"id": id, "score": 0.9 - i as f64 * 0.1}))
        .collect();
    serde_json::json!({ "results": list }).to_string()
}
