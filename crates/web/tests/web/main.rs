//! The workbench over real HTTP: the security checks, the golden-set edit, a stale edit,
//! concurrent submissions. (Browser tests through chromedriver are still to come.)

mod golden;
