//! The one writer of Prometheus text exposition format (what node_exporter's
//! textfile collector reads): `collect --format prom`, `persist status --prom`
//! and `top --prom` all build their files here, so escaping and number
//! formatting cannot drift apart between them.
//!
//! Every family is a gauge with HELP and TYPE lines. node_exporter merges
//! the files of its textfile directory and refuses a family whose HELP
//! differs between files, so a metric's HELP text lives in one place.

use std::fmt::Write as _;

/// A label value as the exposition format wants it: backslash, double quote
/// and line feed escaped; everything else (UTF-8) as is.
pub fn label_value(v: &str) -> String {
    let mut o = String::with_capacity(v.len());
    for c in v.chars() {
        match c {
            '\\' => o.push_str("\\\\"),
            '"' => o.push_str("\\\""),
            '\n' => o.push_str("\\n"),
            c => o.push(c),
        }
    }
    o
}

/// HELP text: only backslash and line feed are escaped there.
fn help_text(v: &str) -> String {
    v.replace('\\', "\\\\").replace('\n', "\\n")
}

/// A sample value: integers print exactly (byte counts above 2^53 keep every
/// digit), fractions as Go's strconv would read them back.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Value {
    Int(u64),
    Signed(i64),
    Float(f64),
}

impl From<u64> for Value {
    fn from(v: u64) -> Self {
        Value::Int(v)
    }
}

impl From<i64> for Value {
    fn from(v: i64) -> Self {
        Value::Signed(v)
    }
}

impl From<f64> for Value {
    fn from(v: f64) -> Self {
        Value::Float(v)
    }
}

impl std::fmt::Display for Value {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match *self {
            Value::Int(v) => write!(f, "{v}"),
            Value::Signed(v) => write!(f, "{v}"),
            Value::Float(v) if v.is_nan() => f.write_str("NaN"),
            Value::Float(v) if v.is_infinite() => {
                f.write_str(if v > 0.0 { "+Inf" } else { "-Inf" })
            }
            Value::Float(v) => write!(f, "{v}"),
        }
    }
}

/// Text exposition being built, family by family.
#[derive(Debug, Default)]
pub struct Exposition {
    text: String,
}

impl Exposition {
    pub fn new() -> Self {
        Self::default()
    }

    /// Start a gauge family: its HELP and TYPE lines. Samples of `name` follow.
    pub fn gauge(&mut self, name: &str, help: &str) -> &mut Self {
        let _ = writeln!(
            self.text,
            "# HELP {name} {}\n# TYPE {name} gauge",
            help_text(help)
        );
        self
    }

    /// One sample of the family started last; labels in the order given.
    pub fn sample(
        &mut self,
        name: &str,
        labels: &[(&str, &str)],
        value: impl Into<Value>,
    ) -> &mut Self {
        self.text.push_str(name);
        if !labels.is_empty() {
            self.text.push('{');
            for (i, (k, v)) in labels.iter().enumerate() {
                if i > 0 {
                    self.text.push(',');
                }
                let _ = write!(self.text, "{k}=\"{}\"", label_value(v));
            }
            self.text.push('}');
        }
        let _ = writeln!(self.text, " {}", value.into());
        self
    }

    /// A gauge family with its samples, left out entirely when it has none
    /// (a family with no sample says nothing and only takes a name).
    pub fn gauge_if_any<'a, L, V>(
        &mut self,
        name: &str,
        help: &str,
        samples: impl IntoIterator<Item = (L, V)>,
    ) -> &mut Self
    where
        L: AsRef<[(&'a str, &'a str)]>,
        V: Into<Value>,
    {
        let mut it = samples.into_iter().peekable();
        if it.peek().is_none() {
            return self;
        }
        self.gauge(name, help);
        for (labels, v) in it {
            self.sample(name, labels.as_ref(), v);
        }
        self
    }

    pub fn finish(self) -> String {
        self.text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn label_values_escape_backslash_quote_and_newline_only() {
        assert_eq!(label_value("a\\b\"c\nd\té"), "a\\\\b\\\"c\\nd\té");
    }

    #[test]
    fn families_print_help_type_and_samples() {
        let mut e = Exposition::new();
        e.gauge("m_bytes", "Bytes\nused \\ here.")
            .sample("m_bytes", &[("path", "/t\"mp"), ("user", "x")], 1u64 << 60)
            .sample("m_bytes", &[], 0.5);
        e.gauge_if_any::<[(&str, &str); 0], u64>("empty", "never printed", []);
        e.gauge_if_any("g", "G.", [([("a", "1")], f64::INFINITY)]);
        assert_eq!(
            e.finish(),
            "# HELP m_bytes Bytes\\nused \\\\ here.\n# TYPE m_bytes gauge\n\
             m_bytes{path=\"/t\\\"mp\",user=\"x\"} 1152921504606846976\nm_bytes 0.5\n\
             # HELP g G.\n# TYPE g gauge\ng{a=\"1\"} +Inf\n"
        );
    }
}
