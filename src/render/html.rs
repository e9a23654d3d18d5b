//! The one page shell for every HTML report (bench, fleet, advise): the same
//! head, stylesheet and layout, so reports look alike and a style fix lands
//! everywhere at once. Charts are inline SVG, drawn by each capability.

use std::fmt::Write as _;

use super::html_escape as esc;

/// The house stylesheet. Class names are shared: `.warn` (a warning box),
/// `.verdict` (advise's answer), `.grid` (charts side by side), `.charts`
/// (charts stacked full width). Every chart shrinks to the column on a narrow
/// window (its viewBox keeps the proportions) instead of overflowing it.
const STYLE: &str = "\
body{font:14px/1.45 system-ui,sans-serif;margin:24px auto;max-width:1200px;color:#212529;padding:0 12px}
h1{font-size:22px} h2{font-size:17px;margin-top:28px}
table{border-collapse:collapse;margin:.5em 0} td,th{padding:3px 10px;border-bottom:1px solid #dee2e6;text-align:left} th{background:#f3f3f3}
.warn{background:#fff4e6;border-left:4px solid #e67700;padding:6px 10px;margin:6px 0}
.verdict{font-size:18px;background:#e7f5ff;border-left:5px solid #1971c2;padding:10px 14px}
code,pre{background:#f1f3f5;padding:2px 4px} figure{margin:10px 0}
.grid{display:flex;flex-wrap:wrap;gap:12px} .charts svg{display:block;margin:1em 0;border:1px solid #eee;width:100%;height:auto}
svg{max-width:100%;height:auto} pre{overflow-x:auto;padding:8px 10px}
";

/// A whole HTML document: `title` in the head and as the page heading,
/// `body` (already escaped HTML) after it.
pub fn page(title: &str, body: &str) -> String {
    let mut s = String::with_capacity(body.len() + 1024);
    let _ = write!(
        s,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <title>{t}</title>\n<style>\n{STYLE}</style></head><body>\n<h1>{t}</h1>\n",
        t = esc(title)
    );
    s.push_str(body);
    s.push_str("</body></html>\n");
    s
}

#[cfg(test)]
mod tests {
    #[test]
    fn page_escapes_the_title_and_wraps_the_body() {
        let p = super::page("a <b>", "<p>x</p>");
        assert!(p.starts_with("<!DOCTYPE html>"));
        assert!(p.contains("<title>a &lt;b&gt;</title>"));
        assert!(p.contains("<h1>a &lt;b&gt;</h1>\n<p>x</p></body></html>\n"));
    }
}
