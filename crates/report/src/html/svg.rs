//! Inline SVG charts: horizontal bars (per-case recall), a histogram (noise) and line charts
//! (trends). Each chart is an `<svg role="img">` with a `<title>` and `<desc>`, scales with
//! its container (`viewBox`), and carries a `<title>` tooltip on every mark. Coordinates
//! are printed with one decimal so the output is stable.

use super::text::{escape, truncate};

/// Series colours (Okabe–Ito, colour-blind safe; the first, near-black, is the overall
/// series). Dashes and marker shapes differ too, so colour is never the only signal.
const COLORS: [&str; 8] = [
    "#111827", "#0072B2", "#E69F00", "#009E73", "#CC79A7", "#D55E00", "#56B4E9", "#7A6A00",
];
const DASHES: [&str; 4] = ["", "6 3", "2 3", "9 3 2 3"];
const PASS: &str = "#2f855a";
const FAIL: &str = "#c0392b";
const THRESHOLD: &str = "#b42318";
const WITHIN: &str = "#3b6fb6";

fn f1(v: f64) -> String {
    let s = format!("{v:.1}");
    if s == "-0.0" {
        "0.0".to_owned()
    } else {
        s
    }
}

fn open(id: &str, w: f64, h: f64, title: &str, desc: &str) -> String {
    format!(
        "<svg class=\"chart\" viewBox=\"0 0 {} {}\" role=\"img\" aria-labelledby=\"{id}-t {id}-d\">\
         <title id=\"{id}-t\">{}</title><desc id=\"{id}-d\">{}</desc>\n",
        f1(w),
        f1(h),
        escape(title),
        escape(desc)
    )
}

fn text(x: f64, y: f64, anchor: &str, class: &str, body: &str) -> String {
    format!(
        "<text x=\"{}\" y=\"{}\" text-anchor=\"{anchor}\" class=\"{class}\">{}</text>",
        f1(x),
        f1(y),
        escape(body)
    )
}

fn line(x1: f64, y1: f64, x2: f64, y2: f64, class: &str) -> String {
    format!(
        "<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" class=\"{class}\"/>",
        f1(x1),
        f1(y1),
        f1(x2),
        f1(y2)
    )
}

fn dashed(x1: f64, y1: f64, x2: f64, y2: f64, color: &str) -> String {
    format!(
        "<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"{color}\" stroke-width=\"1.5\" stroke-dasharray=\"5 4\"/>",
        f1(x1),
        f1(y1),
        f1(x2),
        f1(y2)
    )
}

/// A tidy axis over `[lo, hi]` within `[min, max]`: `(start, end, step)` with about four
/// steps of 1, 2, 2.5 or 5 × 10^k.
pub fn nice_axis(lo: f64, hi: f64, min: f64, max: f64) -> (f64, f64, f64) {
    let (mut lo, mut hi) = if lo.is_finite() && hi.is_finite() && lo <= hi {
        (lo, hi)
    } else {
        (min, max)
    };
    let span = (max - min).abs().max(f64::MIN_POSITIVE);
    if hi - lo < span * 0.02 {
        lo -= span * 0.05;
        hi += span * 0.05;
    }
    let raw = (hi - lo) / 4.0;
    let mag = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 2.5, 5.0, 10.0]
        .iter()
        .map(|m| m * mag)
        .find(|s| *s >= raw * (1.0 - 1e-9))
        .unwrap_or(10.0 * mag);
    let start = ((lo / step + 1e-9).floor() * step).max(min);
    let end = ((hi / step - 1e-9).ceil() * step).min(max);
    (start, end.max(start + step.min(max - start)), step)
}

/// An axis for counts from 0: `(end, step)`, integer steps of 1, 2 or 5 × 10^k, about
/// four of them, `end ≥ max`.
pub fn count_axis(max: f64) -> (f64, f64) {
    let max = if max.is_finite() { max.max(1.0) } else { 1.0 };
    let raw = max / 4.0;
    let mag = 10f64.powf(raw.log10().floor()).max(1.0);
    let step = [1.0, 2.0, 5.0, 10.0]
        .iter()
        .map(|m| m * mag)
        .find(|s| *s >= raw)
        .unwrap_or(10.0 * mag);
    ((max / step).ceil() * step, step)
}

fn ticks(start: f64, end: f64, step: f64) -> Vec<f64> {
    let mut out = Vec::new();
    let mut i = 0.0;
    while start + i * step <= end + step * 1e-6 && out.len() < 50 {
        out.push(start + i * step);
        i += 1.0;
    }
    out
}

/// One bar of [`bars`].
pub struct Bar {
    pub label: String,
    /// 0..1.
    pub value: f64,
    /// Printed after the bar.
    pub text: String,
    pub fail: bool,
    pub tooltip: String,
}

/// Horizontal bars on a 0–100% scale with a dashed reference line at `floor`.
pub fn bars(id: &str, title: &str, desc: &str, items: &[Bar], floor: f64) -> String {
    let (row, font) = if items.len() <= 60 {
        (22.0, 12.5)
    } else {
        (14.0, 9.0)
    };
    let (w, x0, x1, top) = (900.0, 230.0, 740.0, 24.0);
    let h = top + row * items.len() as f64 + 24.0;
    let x = |v: f64| x0 + v.clamp(0.0, 1.0) * (x1 - x0);
    let mut s = open(id, w, h, title, desc);
    for t in [0.0, 0.25, 0.5, 0.75, 1.0] {
        s.push_str(&line(x(t), top - 4.0, x(t), h - 20.0, "grid"));
        s.push_str(&text(
            x(t),
            top - 9.0,
            "middle",
            "lbl",
            &format!("{}%", t * 100.0),
        ));
    }
    for (i, b) in items.iter().enumerate() {
        let y = top + row * i as f64;
        let bh = row * 0.68;
        let by = y + (row - bh) / 2.0;
        s.push_str(&format!("<g><title>{}</title>", escape(&b.tooltip)));
        s.push_str(&format!(
            "<text x=\"{}\" y=\"{}\" text-anchor=\"end\" font-size=\"{font}\">{}</text>",
            f1(x0 - 8.0),
            f1(by + bh * 0.8),
            escape(&truncate(&b.label, 34))
        ));
        s.push_str(&format!(
            "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" rx=\"2\" fill=\"{}\"/>",
            f1(x0),
            f1(by),
            f1(x(b.value) - x0),
            f1(bh),
            if b.fail { FAIL } else { PASS }
        ));
        s.push_str(&format!(
            "<text x=\"{}\" y=\"{}\" font-size=\"{font}\" class=\"val\"{}>{}</text></g>\n",
            f1(x(b.value) + 5.0),
            f1(by + bh * 0.8),
            if b.fail {
                format!(" style=\"fill:{FAIL};font-weight:700\"")
            } else {
                String::new()
            },
            escape(&b.text)
        ));
    }
    s.push_str(&line(x0, top - 4.0, x0, h - 20.0, "axis"));
    s.push_str(&dashed(x(floor), top - 4.0, x(floor), h - 20.0, THRESHOLD));
    s.push_str(&format!(
        "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\" class=\"lbl\" style=\"fill:{THRESHOLD}\">recall floor {}%</text>",
        f1(x(floor)),
        f1(h - 6.0),
        f1(floor * 100.0).trim_end_matches(".0")
    ));
    s.push_str("</svg>\n");
    s
}

/// One bin of [`histogram`]: cases within their own ceiling and over it, stacked.
pub struct Bin {
    pub label: String,
    pub within: usize,
    /// Over their ceiling (drawn red and hatched, on top).
    pub over: usize,
    pub tooltip: String,
}

/// A histogram of counts, with a dashed vertical line after bin `ceiling` (its label given).
pub fn histogram(
    id: &str,
    title: &str,
    desc: &str,
    bins: &[Bin],
    ceiling: Option<(usize, String)>,
    x_title: &str,
) -> String {
    let (w, h) = (560.0, 260.0);
    let (x0, x1, y0, y1) = (44.0, 548.0, 206.0, 30.0);
    let max = bins
        .iter()
        .map(|b| b.within + b.over)
        .max()
        .unwrap_or(0)
        .max(1) as f64;
    let (end, step) = count_axis(max);
    let y = |v: f64| y0 - v / end * (y0 - y1);
    let slot = (x1 - x0) / bins.len().max(1) as f64;
    let mut s = open(id, w, h, title, desc);
    s.push_str(&format!(
        "<defs><pattern id=\"{id}-hatch\" width=\"6\" height=\"6\" patternUnits=\"userSpaceOnUse\" patternTransform=\"rotate(45)\">\
         <rect width=\"6\" height=\"6\" fill=\"{FAIL}\"/><line x1=\"0\" y1=\"0\" x2=\"0\" y2=\"6\" stroke=\"#fff\" stroke-width=\"2\" stroke-opacity=\".45\"/></pattern></defs>\n"
    ));
    for t in ticks(0.0, end, step) {
        s.push_str(&line(x0, y(t), x1, y(t), "grid"));
        s.push_str(&text(x0 - 6.0, y(t) + 4.0, "end", "lbl", &format!("{t}")));
    }
    let every = (bins.len() / 16).max(1);
    for (i, b) in bins.iter().enumerate() {
        let cx = x0 + slot * (i as f64 + 0.5);
        let bw = (slot * 0.72).max(1.0);
        let total = (b.within + b.over) as f64;
        s.push_str(&format!("<g><title>{}</title>", escape(&b.tooltip)));
        if b.within > 0 {
            s.push_str(&format!(
                "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{WITHIN}\"/>",
                f1(cx - bw / 2.0),
                f1(y(b.within as f64)),
                f1(bw),
                f1(y0 - y(b.within as f64)),
            ));
        }
        if b.over > 0 {
            s.push_str(&format!(
                "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"url(#{id}-hatch)\"/>",
                f1(cx - bw / 2.0),
                f1(y(total)),
                f1(bw),
                f1(y(b.within as f64) - y(total)),
            ));
        }
        if total > 0.0 {
            s.push_str(&text(
                cx,
                y(total) - 4.0,
                "middle",
                "lbl",
                &format!("{total}"),
            ));
        }
        s.push_str("</g>");
        if i % every == 0 || i + 1 == bins.len() {
            s.push_str(&text(cx, y0 + 15.0, "middle", "lbl", &b.label));
        }
        s.push('\n');
    }
    s.push_str(&line(x0, y0, x1, y0, "axis"));
    if let Some((c, label)) = ceiling {
        let cx = x0 + slot * (c as f64 + 1.0);
        s.push_str(&dashed(cx, y1 - 14.0, cx, y0 + 3.0, THRESHOLD));
        let anchor = if cx > (x0 + x1) / 2.0 { "end" } else { "start" };
        let dx = if anchor == "end" { -5.0 } else { 5.0 };
        s.push_str(&format!(
            "<text x=\"{}\" y=\"{}\" text-anchor=\"{anchor}\" class=\"lbl\" style=\"fill:{THRESHOLD}\">{}</text>",
            f1(cx + dx),
            f1(y1 - 16.0 + 11.0),
            escape(&label)
        ));
    }
    s.push_str(&text((x0 + x1) / 2.0, h - 14.0, "middle", "lbl", x_title));
    s.push_str(&format!(
        "<text transform=\"translate(12 {}) rotate(-90)\" text-anchor=\"middle\" class=\"lbl\">cases</text>",
        f1((y0 + y1) / 2.0)
    ));
    s.push_str("</svg>\n");
    s
}

/// One line of a [`line_chart`]; `None` leaves a gap.
pub struct Series {
    pub name: String,
    pub values: Vec<Option<f64>>,
}

/// A line chart.
pub struct LineChart<'a> {
    pub id: &'a str,
    pub title: &'a str,
    pub desc: &'a str,
    /// One label per x position (run).
    pub x_labels: &'a [String],
    /// One tooltip prefix per x position.
    pub x_tooltips: &'a [String],
    /// The first series is drawn thicker (the overall mean).
    pub series: &'a [Series],
    /// The value range the metric can take, e.g. `(0, 1)`.
    pub bounds: (f64, f64),
    /// A dashed horizontal reference (value, label).
    pub threshold: Option<(f64, String)>,
    /// Formats axis ticks and tooltip values.
    pub format: &'a dyn Fn(f64) -> String,
}

fn marker(i: usize, x: f64, y: f64, color: &str) -> String {
    let (x, y) = (x, y);
    match i % 4 {
        0 => format!(
            "<circle cx=\"{}\" cy=\"{}\" r=\"3.6\" fill=\"{color}\"/>",
            f1(x),
            f1(y)
        ),
        1 => format!(
            "<rect x=\"{}\" y=\"{}\" width=\"6.4\" height=\"6.4\" fill=\"{color}\"/>",
            f1(x - 3.2),
            f1(y - 3.2)
        ),
        2 => format!(
            "<path d=\"M{} {}L{} {}L{} {}Z\" fill=\"{color}\"/>",
            f1(x),
            f1(y - 4.2),
            f1(x + 4.0),
            f1(y + 3.2),
            f1(x - 4.0),
            f1(y + 3.2)
        ),
        _ => format!(
            "<path d=\"M{} {}L{} {}L{} {}L{} {}Z\" fill=\"{color}\"/>",
            f1(x),
            f1(y - 4.4),
            f1(x + 4.4),
            f1(y),
            f1(x),
            f1(y + 4.4),
            f1(x - 4.4),
            f1(y)
        ),
    }
}

fn stroke(i: usize) -> (&'static str, &'static str, f64) {
    let color = COLORS[i % COLORS.len()];
    if i == 0 {
        (color, "", 2.6)
    } else {
        (color, DASHES[(i - 1) % DASHES.len()], 1.7)
    }
}

/// Draws `c`.
pub fn line_chart(c: &LineChart<'_>) -> String {
    let (w, h) = (440.0, 264.0);
    let (x0, x1, y0, y1) = (50.0, 424.0, 196.0, 16.0);
    let mut lo = f64::INFINITY;
    let mut hi = f64::NEG_INFINITY;
    for v in c.series.iter().flat_map(|s| s.values.iter().flatten()) {
        lo = lo.min(*v);
        hi = hi.max(*v);
    }
    if let Some((t, _)) = &c.threshold {
        lo = lo.min(*t);
        hi = hi.max(*t);
    }
    let (start, end, step) = nice_axis(lo, hi, c.bounds.0, c.bounds.1);
    let span = (end - start).max(f64::MIN_POSITIVE);
    let y = |v: f64| y0 - (v - start) / span * (y0 - y1);
    let n = c.x_labels.len();
    let x = |i: usize| {
        if n <= 1 {
            (x0 + x1) / 2.0
        } else {
            x0 + 10.0 + (x1 - x0 - 20.0) * i as f64 / (n - 1) as f64
        }
    };
    let mut s = open(c.id, w, h, c.title, c.desc);
    for t in ticks(start, end, step) {
        s.push_str(&line(x0, y(t), x1, y(t), "grid"));
        s.push_str(&text(x0 - 6.0, y(t) + 4.0, "end", "lbl", &(c.format)(t)));
    }
    s.push_str(&line(x0, y0, x1, y0, "axis"));
    let every = n.div_ceil(10).max(1);
    for (i, label) in c.x_labels.iter().enumerate() {
        s.push_str(&line(x(i), y0, x(i), y0 + 4.0, "axis"));
        if i % every == 0 || i + 1 == n {
            s.push_str(&format!(
                "<text transform=\"translate({} {}) rotate(-35)\" text-anchor=\"end\" class=\"lbl\">{}</text>",
                f1(x(i) + 3.0),
                f1(y0 + 14.0),
                escape(&truncate(label, 16))
            ));
        }
    }
    if let Some((t, label)) = &c.threshold {
        s.push_str(&dashed(x0, y(*t), x1, y(*t), THRESHOLD));
        s.push_str(&format!(
            "<text x=\"{}\" y=\"{}\" text-anchor=\"end\" class=\"lbl\" style=\"fill:{THRESHOLD}\">{}</text>",
            f1(x1 - 2.0),
            f1(y(*t) - 4.0),
            escape(label)
        ));
    }
    // Draw the overall series last, on top.
    let order: Vec<usize> = (1..c.series.len())
        .chain(0..c.series.len().min(1))
        .collect();
    for i in order {
        let series = &c.series[i];
        let (color, dash, width) = stroke(i);
        let mut d = String::new();
        let mut pen_down = false;
        for (j, v) in series.values.iter().enumerate() {
            match v {
                Some(v) => {
                    d.push_str(&format!(
                        "{}{} {}",
                        if pen_down { "L" } else { "M" },
                        f1(x(j)),
                        f1(y(*v))
                    ));
                    pen_down = true;
                }
                None => pen_down = false,
            }
        }
        s.push_str(&format!("<g><title>{}</title>", escape(&series.name)));
        if !d.is_empty() {
            s.push_str(&format!(
                "<path d=\"{d}\" fill=\"none\" stroke=\"{color}\" stroke-width=\"{width}\" stroke-linejoin=\"round\"{}/>",
                if dash.is_empty() {
                    String::new()
                } else {
                    format!(" stroke-dasharray=\"{dash}\"")
                }
            ));
        }
        for (j, v) in series.values.iter().enumerate() {
            if let Some(v) = v {
                s.push_str(&format!(
                    "<g><title>{}: {} = {}</title>{}</g>",
                    escape(c.x_tooltips.get(j).map_or("", String::as_str)),
                    escape(&series.name),
                    escape(&(c.format)(*v)),
                    marker(i, x(j), y(*v), color)
                ));
            }
        }
        s.push_str("</g>\n");
    }
    s.push_str("</svg>\n");
    s
}

/// A small line without axes (one domain's trend in a table cell): the series scaled to its
/// own range within `bounds`, the newest point marked; tooltips per point.
pub fn sparkline(
    title: &str,
    values: &[Option<f64>],
    tooltips: &[String],
    bounds: (f64, f64),
    format: &dyn Fn(f64) -> String,
) -> String {
    let (w, h, pad) = (180.0, 40.0, 5.0);
    let defined: Vec<f64> = values.iter().flatten().copied().collect();
    let lo = defined.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = defined.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let (start, end, _) = nice_axis(lo, hi, bounds.0, bounds.1);
    let span = (end - start).max(f64::MIN_POSITIVE);
    let n = values.len();
    let x = |i: usize| {
        if n <= 1 {
            w / 2.0
        } else {
            pad + (w - 2.0 * pad) * i as f64 / (n - 1) as f64
        }
    };
    let y = |v: f64| h - pad - (v - start) / span * (h - 2.0 * pad);
    let mut s = format!(
        "<svg class=\"spark\" viewBox=\"0 0 {} {}\" role=\"img\" aria-label=\"{}\">",
        f1(w),
        f1(h),
        escape(title)
    );
    s.push_str(&format!(
        "<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" class=\"grid\"/>",
        f1(pad),
        f1(h - pad),
        f1(w - pad),
        f1(h - pad)
    ));
    let mut d = String::new();
    let mut pen_down = false;
    for (i, v) in values.iter().enumerate() {
        match v {
            Some(v) => {
                d.push_str(&format!(
                    "{}{} {}",
                    if pen_down { "L" } else { "M" },
                    f1(x(i)),
                    f1(y(*v))
                ));
                pen_down = true;
            }
            None => pen_down = false,
        }
    }
    if !d.is_empty() {
        s.push_str(&format!(
            "<path d=\"{d}\" fill=\"none\" stroke=\"{}\" stroke-width=\"1.6\" stroke-linejoin=\"round\"/>",
            COLORS[1]
        ));
    }
    let last = values.iter().rposition(Option::is_some);
    for (i, v) in values.iter().enumerate() {
        if let Some(v) = v {
            s.push_str(&format!(
                "<g><title>{}: {}</title><circle cx=\"{}\" cy=\"{}\" r=\"{}\" fill=\"{}\"/></g>",
                escape(tooltips.get(i).map_or("", String::as_str)),
                escape(&format(*v)),
                f1(x(i)),
                f1(y(*v)),
                if Some(i) == last { "3.2" } else { "1.8" },
                if Some(i) == last {
                    COLORS[0]
                } else {
                    COLORS[1]
                }
            ));
        }
    }
    s.push_str("</svg>");
    s
}

/// An HTML legend for the series of a line chart (swatch with the line's dash and marker).
pub fn legend(series: &[Series]) -> String {
    let mut s = String::from("<div class=\"legend\">");
    for (i, se) in series.iter().enumerate() {
        let (color, dash, width) = stroke(i);
        s.push_str(&format!(
            "<span><svg viewBox=\"0 0 28 12\" aria-hidden=\"true\"><line x1=\"1\" y1=\"6\" x2=\"27\" y2=\"6\" stroke=\"{color}\" stroke-width=\"{width}\"{}/>{}</svg>{}</span>",
            if dash.is_empty() {
                String::new()
            } else {
                format!(" stroke-dasharray=\"{dash}\"")
            },
            marker(i, 14.0, 6.0, color),
            escape(&se.name)
        ));
    }
    s.push_str("</div>\n");
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nice_axes() {
        assert_eq!(nice_axis(0.0, 1.0, 0.0, 1.0), (0.0, 1.0, 0.25));
        let (a, b, st) = nice_axis(0.93, 1.0, 0.0, 1.0);
        assert!(a <= 0.93 && b >= 1.0 - 1e-12 && st > 0.0, "{a} {b} {st}");
        assert!(b <= 1.0);
        let (a, b, _) = nice_axis(83.3, 100.0, 0.0, 100.0);
        assert!((70.0..=83.3).contains(&a) && b == 100.0, "{a} {b}");
        // A flat series still gets a range.
        let (a, b, _) = nice_axis(1.0, 1.0, 0.0, 1.0);
        assert!(a < 1.0 && b == 1.0);
    }

    #[test]
    fn count_axes() {
        assert_eq!(count_axis(1.0), (1.0, 1.0));
        assert_eq!(count_axis(3.0), (3.0, 1.0));
        assert_eq!(count_axis(7.0), (8.0, 2.0));
        assert_eq!(count_axis(37.0), (40.0, 10.0));
        assert_eq!(count_axis(0.0), (1.0, 1.0));
    }

    #[test]
    fn ticks_cover_the_axis() {
        assert_eq!(ticks(0.0, 1.0, 0.25), vec![0.0, 0.25, 0.5, 0.75, 1.0]);
    }
}
