//! The workbench over real HTTP (the security checks, the golden-set edit, a stale edit,
//! concurrent submissions) and in a real browser (Debian's Chromium through chromedriver:
//! the golden-set, exam and claims flows, screenshots of each page).
// The browser tests print the screenshots' paths and the flows' times.
#![allow(clippy::print_stderr)]

mod browser;
mod claims;
mod golden;
mod runs;
mod search;
mod webdriver;
