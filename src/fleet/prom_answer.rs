//! One Prometheus query answer, read as it streams in: each series of the
//! `result` array is folded into a per-host figure as soon as it is parsed,
//! so memory follows the hosts kept, not the size of the answer (a series
//! carries every label of the metric; an answer for a big fleet can be
//! hundreds of MiB of labels that are never needed). serde's visitors do the
//! parsing; nothing here reads JSON by hand.

use std::collections::HashMap;
use std::fmt;
use std::io::Read;

use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};

/// Per host, one figure; several series of one host combine with `pick`.
pub(super) struct Fold<'a> {
    label: &'a str,
    pick: fn(u64, u64) -> u64,
    pub(super) hosts: HashMap<String, u64>,
    /// Series with a value but without the host label.
    pub(super) unlabeled: u64,
    /// Elements of `result` that are not a `{metric, value}` series (a
    /// matrix's `values`, a scalar's numbers).
    pub(super) not_series: u64,
}

impl<'a> Fold<'a> {
    pub(super) fn new(label: &'a str, pick: fn(u64, u64) -> u64) -> Self {
        Fold {
            label,
            pick,
            hosts: HashMap::new(),
            unlabeled: 0,
            not_series: 0,
        }
    }

    fn add(&mut self, host: Option<String>, value: &str) {
        let Some(v) = value.parse::<f64>().ok().filter(|v| v.is_finite()) else {
            return;
        };
        let Some(h) = host else {
            self.unlabeled += 1;
            return;
        };
        let v = v.max(0.0).round() as u64;
        let pick = self.pick;
        self.hosts
            .entry(h)
            .and_modify(|o| *o = pick(*o, v))
            .or_insert(v);
    }
}

/// What the answer said besides its series.
#[derive(Default)]
pub(super) struct Head {
    pub(super) status: Option<String>,
    pub(super) error_type: Option<String>,
    pub(super) error: Option<String>,
    pub(super) has_data: bool,
    pub(super) result_type: Option<String>,
}

/// Parse one answer from `r`, folding its series into `fold`.
pub(super) fn parse(r: impl Read, fold: &mut Fold<'_>) -> serde_json::Result<Head> {
    let mut de = serde_json::Deserializer::from_reader(r);
    let head = AnswerSeed(fold).deserialize(&mut de)?;
    de.end()?;
    Ok(head)
}

struct AnswerSeed<'f, 'a>(&'f mut Fold<'a>);

impl<'de> DeserializeSeed<'de> for AnswerSeed<'_, '_> {
    type Value = Head;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Head, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for AnswerSeed<'_, '_> {
    type Value = Head;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a Prometheus API answer object")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut m: A) -> Result<Head, A::Error> {
        let mut head = Head::default();
        while let Some(k) = m.next_key::<String>()? {
            match k.as_str() {
                "status" => head.status = Some(m.next_value()?),
                "errorType" => head.error_type = m.next_value()?,
                "error" => head.error = m.next_value()?,
                "data" => {
                    if let Some(rt) = m.next_value_seed(DataSeed(&mut *self.0))? {
                        head.has_data = true;
                        head.result_type = rt;
                    }
                }
                _ => {
                    m.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(head)
    }
}

/// `data`: None when null, else its `resultType` (None when missing).
struct DataSeed<'f, 'a>(&'f mut Fold<'a>);

impl<'de> DeserializeSeed<'de> for DataSeed<'_, '_> {
    type Value = Option<Option<String>>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for DataSeed<'_, '_> {
    type Value = Option<Option<String>>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a data object or null")
    }
    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_map<A: MapAccess<'de>>(self, mut m: A) -> Result<Self::Value, A::Error> {
        let mut rt = None;
        while let Some(k) = m.next_key::<String>()? {
            match k.as_str() {
                "resultType" => rt = Some(m.next_value()?),
                "result" => m.next_value_seed(ResultSeed(&mut *self.0))?,
                _ => {
                    m.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(Some(rt))
    }
}

/// `result`: an array of series (a vector or matrix) or of a scalar's parts.
struct ResultSeed<'f, 'a>(&'f mut Fold<'a>);

impl<'de> DeserializeSeed<'de> for ResultSeed<'_, '_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for ResultSeed<'_, '_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a result array")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut s: A) -> Result<(), A::Error> {
        while s.next_element_seed(SeriesSeed(&mut *self.0))?.is_some() {}
        Ok(())
    }
}

/// One element of `result`, folded into the figures if it is a series.
struct SeriesSeed<'f, 'a>(&'f mut Fold<'a>);

impl<'de> DeserializeSeed<'de> for SeriesSeed<'_, '_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl SeriesSeed<'_, '_> {
    fn not_series<E>(self) -> Result<(), E> {
        self.0.not_series += 1;
        Ok(())
    }
}

impl<'de> Visitor<'de> for SeriesSeed<'_, '_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a series {metric, value}")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut m: A) -> Result<(), A::Error> {
        let mut host = None;
        let mut value: Option<(IgnoredAny, String)> = None;
        while let Some(k) = m.next_key::<String>()? {
            match k.as_str() {
                "metric" => host = m.next_value_seed(LabelSeed(self.0.label))?,
                "value" => value = Some(m.next_value()?),
                _ => {
                    m.next_value::<IgnoredAny>()?;
                }
            }
        }
        match value {
            Some((_, v)) => {
                self.0.add(host, &v);
                Ok(())
            }
            None => self.not_series(),
        }
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut s: A) -> Result<(), A::Error> {
        while s.next_element::<IgnoredAny>()?.is_some() {}
        self.not_series()
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> Result<(), E> {
        self.not_series()
    }
    fn visit_u64<E: de::Error>(self, _: u64) -> Result<(), E> {
        self.not_series()
    }
    fn visit_i64<E: de::Error>(self, _: i64) -> Result<(), E> {
        self.not_series()
    }
    fn visit_str<E: de::Error>(self, _: &str) -> Result<(), E> {
        self.not_series()
    }
    fn visit_bool<E: de::Error>(self, _: bool) -> Result<(), E> {
        self.not_series()
    }
    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        self.not_series()
    }
}

/// A series' `metric` object: the value of one label, the rest skipped.
struct LabelSeed<'a>(&'a str);

impl<'de> DeserializeSeed<'de> for LabelSeed<'_> {
    type Value = Option<String>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Option<String>, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for LabelSeed<'_> {
    type Value = Option<String>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a label map")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut m: A) -> Result<Option<String>, A::Error> {
        let mut found = None;
        while let Some(k) = m.next_key::<String>()? {
            if k == self.0 {
                found = Some(m.next_value()?);
            } else {
                m.next_value::<IgnoredAny>()?;
            }
        }
        Ok(found)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fold(text: &str) -> (Head, HashMap<String, u64>, u64, u64) {
        let mut f = Fold::new("instance", u64::max);
        let h = parse(text.as_bytes(), &mut f).unwrap();
        (h, f.hosts, f.unlabeled, f.not_series)
    }

    #[test]
    fn a_vector_is_folded_per_host_whatever_the_key_order() {
        let (h, hosts, unl, ns) = fold(
            r#"{"data":{"result":[
                {"value":[1.5,"10"],"metric":{"job":"n","instance":"a"}},
                {"metric":{"instance":"a","device":"x"},"value":[1.5,"30"]},
                {"metric":{"instance":"b"},"value":[1.5,"NaN"]},
                {"metric":{"instance":"c"},"value":[1.5,"-4"]},
                {"metric":{"job":"n"},"value":[1.5,"7"]}
              ],"resultType":"vector"},"status":"success"}"#,
        );
        assert_eq!(h.status.as_deref(), Some("success"));
        assert_eq!(h.result_type.as_deref(), Some("vector"));
        assert!(h.has_data);
        assert_eq!(hosts.len(), 2);
        assert_eq!(hosts["a"], 30);
        assert_eq!(hosts["c"], 0);
        assert_eq!((unl, ns), (1, 0));
    }

    #[test]
    fn a_matrix_or_scalar_is_not_taken_for_series_and_an_error_is_read() {
        let (h, hosts, _, ns) = fold(
            r#"{"status":"success","data":{"resultType":"matrix","result":[
                {"metric":{"instance":"a"},"values":[[1,"1"],[2,"2"]]}]}}"#,
        );
        assert_eq!(h.result_type.as_deref(), Some("matrix"));
        assert!(hosts.is_empty());
        assert_eq!(ns, 1);
        let (_, _, _, ns) =
            fold(r#"{"status":"success","data":{"resultType":"scalar","result":[1,"2"]}}"#);
        assert_eq!(ns, 2);
        let (h, ..) = fold(r#"{"status":"error","errorType":"bad_data","error":"x","data":null}"#);
        assert_eq!(h.error_type.as_deref(), Some("bad_data"));
        assert!(!h.has_data);
    }

    #[test]
    fn trailing_text_and_a_wrong_shape_are_errors() {
        let mut f = Fold::new("instance", u64::max);
        assert!(parse(&b"{\"status\":\"success\"} x"[..], &mut f).is_err());
        assert!(parse(&b"<html></html>"[..], &mut f).is_err());
        assert!(parse(&b"{\"data\":{\"result\":{}}}"[..], &mut f).is_err());
    }
}
