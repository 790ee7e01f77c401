//! The HTML file: one page with its CSS and script inline and the report's
//! data as JSON in a `<script type="application/json">`, so it opens from
//! disk and asks nothing of the network (its Content-Security-Policy
//! forbids every request).
//!
//! The JSON is written with every `<`, `>` and `&` as a `\u00XX` escape,
//! so no transcript text can end the data element or open markup; the
//! script puts every text into the page as a text node.

use std::io::Write;

use super::model::Report;

const CSS: &str = include_str!("page.css");
const SCRIPT: &str = include_str!("page.js");

/// Writes the page for `report` to `out`.
pub(crate) fn write_page(report: &Report, out: &mut impl Write) -> std::io::Result<()> {
    out.write_all(
        b"<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n\
          <meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; \
          style-src 'unsafe-inline'; script-src 'unsafe-inline'\">\n\
          <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>alcove report ",
    )?;
    out.write_all(escape_html(&report.session_id).as_bytes())?;
    out.write_all(b"</title>\n<style>\n")?;
    out.write_all(CSS.as_bytes())?;
    out.write_all(
        b"</style></head>\n<body>\n<noscript>This report is drawn by its inline script; \
          its data is the JSON in the element #report-data.</noscript>\n<div id=\"app\"></div>\n\
          <script type=\"application/json\" id=\"report-data\">",
    )?;
    serde_json::to_writer(&mut JsonInHtml(&mut *out), report)?;
    out.write_all(b"</script>\n<script>\n")?;
    out.write_all(SCRIPT.as_bytes())?;
    out.write_all(b"</script>\n</body></html>\n")?;
    Ok(())
}

/// Text for HTML element content and attributes.
fn escape_html(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for ch in text.chars() {
        match ch {
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            other => out.push(other),
        }
    }
    out
}

/// Passes JSON through with `<`, `>` and `&` as `\u00XX` escapes (they can
/// only occur inside JSON strings, where the escape means the same).
struct JsonInHtml<W>(W);

impl<W: Write> Write for JsonInHtml<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let mut start = 0;
        for (index, byte) in buf.iter().enumerate() {
            let escape: &[u8] = match byte {
                b'<' => b"\\u003c",
                b'>' => b"\\u003e",
                b'&' => b"\\u0026",
                _ => continue,
            };
            self.0.write_all(&buf[start..index])?;
            self.0.write_all(escape)?;
            start = index + 1;
        }
        self.0.write_all(&buf[start..])?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.0.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transcript_text_cannot_end_the_data_element_or_open_markup() {
        let report = Report {
            session_id: "<b>id</b>".to_owned(),
            task: "</script><script>alert(1)</script> & <!-- x".to_owned(),
            ..Report::default()
        };
        let mut page = Vec::new();
        write_page(&report, &mut page).unwrap();
        let page = String::from_utf8(page).unwrap();
        assert_eq!(page.matches("<script").count(), 2, "{page}");
        assert_eq!(page.matches("</script>").count(), 2);
        assert!(!page.contains("<b>") && !page.contains("<!-- x"));
        assert!(page.contains("<title>alcove report &lt;b&gt;id&lt;/b&gt;</title>"));
        // The data still reads back as the same text.
        let data = page
            .split("id=\"report-data\">")
            .nth(1)
            .and_then(|rest| rest.split("</script>").next())
            .unwrap();
        let value: serde_json::Value = serde_json::from_str(data).unwrap();
        assert_eq!(value["task"], report.task);
    }
}
