//! A small W3C WebDriver client over plain HTTP (ureq) for Debian's `chromium-driver`:
//! start chromedriver on a free loopback port, open a headless Chromium session with a fresh
//! profile, navigate, find, click, type, press keys, read, take screenshots. Enough for the
//! workbench's flows; nothing is faked (a real browser runs the pages, their forms, their
//! script and their Content-Security-Policy).

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

const ELEMENT: &str = "element-6066-11e4-a52e-4f735466cecf";

/// The browser and its driver, or why the tests cannot have them.
pub fn find() -> Result<(PathBuf, PathBuf), String> {
    let pick = |var: &str, candidates: &[&str]| -> Option<PathBuf> {
        if let Some(p) = std::env::var_os(var) {
            return Some(PathBuf::from(p));
        }
        candidates.iter().map(PathBuf::from).find(|p| p.exists())
    };
    let chromium = pick(
        "CHROMIUM",
        &["/usr/bin/chromium", "/usr/bin/chromium-browser"],
    )
    .ok_or("chromium not found (Debian's `chromium`; scripts/install-chromium.sh installs it)")?;
    let driver = pick(
        "CHROMEDRIVER",
        &["/usr/bin/chromedriver", "/usr/lib/chromium/chromedriver"],
    )
    .ok_or(
        "chromedriver not found (Debian's `chromium-driver`; scripts/install-chromium.sh installs it)",
    )?;
    Ok((chromium, driver))
}

/// `Some((chromium, chromedriver))`, or `None` after printing why the browser test is
/// skipped; under `VEREDICTO_REQUIRE_BROWSER=1` (the test command sets it) a missing
/// browser fails the test instead.
pub fn browser_or_skip(test: &str) -> Option<(PathBuf, PathBuf)> {
    match find() {
        Ok(found) => Some(found),
        Err(why) => {
            if std::env::var("VEREDICTO_REQUIRE_BROWSER").as_deref() == Ok("1") {
                panic!("{test}: {why}; VEREDICTO_REQUIRE_BROWSER=1 requires the browser");
            }
            eprintln!("skipping {test}: {why}");
            None
        }
    }
}

/// A chromedriver process and one browser session; both end when dropped.
pub struct Browser {
    driver: Child,
    base: String,
    session: String,
    agent: ureq::Agent,
    _profile: tempfile::TempDir,
}

impl Drop for Browser {
    fn drop(&mut self) {
        let _ = self
            .agent
            .delete(&format!("{}/session/{}", self.base, self.session))
            .call();
        let _ = self.driver.kill();
        let _ = self.driver.wait();
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

impl Browser {
    /// Starts chromedriver and a headless Chromium (fresh `--user-data-dir`, the flags a
    /// root container needs, no network of its own), in `lang` (`en`, `es`).
    pub fn start(chromium: &Path, driver: &Path, lang: &str) -> Browser {
        let port = free_port();
        let child = Command::new(driver)
            .arg(format!("--port={port}"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {}: {e}", driver.display()));
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_global(Some(Duration::from_secs(60)))
            .build()
            .into();
        let base = format!("http://127.0.0.1:{port}");
        let start = Instant::now();
        loop {
            let ready = agent
                .get(&format!("{base}/status"))
                .call()
                .ok()
                .and_then(|mut r| r.body_mut().read_to_string().ok())
                .and_then(|b| serde_json::from_str::<Value>(&b).ok())
                .is_some_and(|v| v["value"]["ready"] == json!(true));
            if ready {
                break;
            }
            assert!(
                start.elapsed() < Duration::from_secs(30),
                "chromedriver did not start on port {port}"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        let profile = tempfile::tempdir().unwrap();
        let args = vec![
            "--headless".to_owned(),
            "--no-sandbox".to_owned(),
            "--disable-gpu".to_owned(),
            "--disable-quic".to_owned(),
            "--no-first-run".to_owned(),
            "--no-default-browser-check".to_owned(),
            "--disable-background-networking".to_owned(),
            "--disable-component-update".to_owned(),
            "--disable-sync".to_owned(),
            "--disable-extensions".to_owned(),
            "--disable-dev-shm-usage".to_owned(),
            "--hide-scrollbars".to_owned(),
            "--window-size=1280,1100".to_owned(),
            format!("--lang={lang}"),
            format!("--user-data-dir={}", profile.path().display()),
        ];
        let caps = json!({"capabilities": {"alwaysMatch": {
            "browserName": "chrome",
            "goog:chromeOptions": {
                "binary": chromium.display().to_string(),
                "args": args,
                "prefs": {"intl.accept_languages": lang},
            },
        }}});
        let mut b = Browser {
            driver: child,
            base,
            session: String::new(),
            agent,
            _profile: profile,
        };
        let v = b.call("POST", "/session", Some(caps));
        b.session = v["sessionId"]
            .as_str()
            .unwrap_or_else(|| panic!("no session: {v}"))
            .to_owned();
        b
    }

    fn call(&self, method: &str, path: &str, body: Option<Value>) -> Value {
        let url = if path == "/session" {
            format!("{}{path}", self.base)
        } else {
            format!("{}/session/{}{path}", self.base, self.session)
        };
        let sent = match method {
            "GET" => self.agent.get(&url).call(),
            "DELETE" => self.agent.delete(&url).call(),
            _ => self
                .agent
                .post(&url)
                .header("Content-Type", "application/json")
                .send(body.unwrap_or(json!({})).to_string()),
        };
        let mut resp = sent.unwrap_or_else(|e| panic!("{method} {path}: {e}"));
        let status = resp.status().as_u16();
        let text = resp.body_mut().read_to_string().unwrap();
        let v: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
        assert!(status < 400, "{method} {path}: {status} {text}");
        v["value"].clone()
    }

    /// Opens `url` and waits for the page to load.
    pub fn goto(&self, url: &str) {
        self.call("POST", "/url", Some(json!({"url": url})));
    }

    /// The current address.
    pub fn url(&self) -> String {
        self.call("GET", "/url", None)
            .as_str()
            .unwrap_or("")
            .to_owned()
    }

    /// The first element matching the CSS selector, waiting up to 10 s for it.
    pub fn find(&self, css: &str) -> String {
        let start = Instant::now();
        loop {
            if let Some(e) = self.try_find(css) {
                return e;
            }
            assert!(
                start.elapsed() < Duration::from_secs(10),
                "no element {css} on {}:\n{}",
                self.url(),
                self.text("body")
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// The first element matching `css` now, if any.
    pub fn try_find(&self, css: &str) -> Option<String> {
        let url = format!("{}/session/{}/element", self.base, self.session);
        let mut resp = self
            .agent
            .post(&url)
            .header("Content-Type", "application/json")
            .send(json!({"using": "css selector", "value": css}).to_string())
            .ok()?;
        if resp.status().as_u16() >= 400 {
            return None;
        }
        let v: Value = serde_json::from_str(&resp.body_mut().read_to_string().ok()?).ok()?;
        v["value"][ELEMENT].as_str().map(str::to_owned)
    }

    /// Clicks the element matching `css`.
    pub fn click(&self, css: &str) {
        let e = self.find(css);
        self.call("POST", &format!("/element/{e}/click"), Some(json!({})));
    }

    /// Types `text` into the element matching `css`.
    pub fn type_into(&self, css: &str, text: &str) {
        let e = self.find(css);
        self.call(
            "POST",
            &format!("/element/{e}/value"),
            Some(json!({"text": text})),
        );
    }

    /// The rendered text of the element matching `css` (empty when there is none, or when
    /// the page reloaded under it: a refreshing page is read again by the waits).
    pub fn text(&self, css: &str) -> String {
        let Some(e) = self.try_find(css) else {
            return String::new();
        };
        let url = format!("{}/session/{}/element/{e}/text", self.base, self.session);
        let Ok(mut resp) = self.agent.get(&url).call() else {
            return String::new();
        };
        if resp.status().as_u16() >= 400 {
            return String::new();
        }
        resp.body_mut()
            .read_to_string()
            .ok()
            .and_then(|b| serde_json::from_str::<Value>(&b).ok())
            .and_then(|v| v["value"].as_str().map(str::to_owned))
            .unwrap_or_default()
    }

    /// Runs `script` in the page (a function body; `arguments` as given) and returns its
    /// value.
    pub fn script(&self, script: &str) -> Value {
        self.call(
            "POST",
            "/execute/sync",
            Some(json!({"script": script, "args": []})),
        )
    }

    /// Presses keys on whatever has the focus: each string of `chords` is one chord (its
    /// keys pressed in order, released in reverse), WebDriver key codes allowed
    /// (`\u{E009}` Control, `\u{E007}` Enter). For text, [`Browser::type_into`].
    pub fn keys(&self, chords: &[&str]) {
        let mut actions = Vec::new();
        for chord in chords {
            for c in chord.chars() {
                actions.push(json!({"type": "keyDown", "value": c.to_string()}));
            }
            for c in chord.chars().rev() {
                actions.push(json!({"type": "keyUp", "value": c.to_string()}));
            }
        }
        self.call(
            "POST",
            "/actions",
            Some(json!({"actions": [{"type": "key", "id": "keyboard", "actions": actions}]})),
        );
        self.call("DELETE", "/actions", None);
    }

    /// The `id` of the focused element.
    pub fn focused_id(&self) -> String {
        self.script("return document.activeElement ? document.activeElement.id : '';")
            .as_str()
            .unwrap_or("")
            .to_owned()
    }

    /// Waits until `cond` holds on the page's text (up to `secs` seconds).
    pub fn wait_for_text(&self, css: &str, want: &str, secs: u64) -> String {
        let start = Instant::now();
        loop {
            let t = self.text(css);
            if t.contains(want) {
                return t;
            }
            assert!(
                start.elapsed() < Duration::from_secs(secs),
                "{want:?} never appeared in {css} on {}: {t}\npage: {}",
                self.url(),
                self.text("body")
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// Saves a screenshot of the viewport as PNG at `path` and prints the path.
    pub fn screenshot(&self, path: &Path) {
        use base64::Engine as _;
        let b64 = self.call("GET", "/screenshot", None);
        let png = base64::engine::general_purpose::STANDARD
            .decode(b64.as_str().unwrap_or(""))
            .unwrap();
        assert!(png.starts_with(b"\x89PNG"), "not a PNG");
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).unwrap();
        }
        std::fs::write(path, png).unwrap();
        eprintln!("screenshot: {}", path.display());
    }
}

/// `target/workbench-screenshots/NAME.png` under the build's target folder
/// (`CARGO_TARGET_DIR` when set).
pub fn screenshot_path(name: &str) -> PathBuf {
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target"));
    target
        .join("workbench-screenshots")
        .join(format!("{name}.png"))
}
