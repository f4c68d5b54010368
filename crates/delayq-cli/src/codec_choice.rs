//! Which codec each queue's values are read and written with: the first `--codec-for` pattern
//! that matches the queue's name, else `--codec`.

use crate::text_codec::{CodecName, TextCodec};

/// One `--codec-for` rule: queues whose name matches `pattern` (a glob: `*`, `?`) use `codec`.
#[derive(Debug, Clone)]
pub(crate) struct CodecRule {
    pattern: String,
    codec: CodecName,
}

/// The rules of one `--codec-for` value (or of `DELAYQ_CODEC_FOR`).
#[derive(Debug, Clone)]
pub(crate) struct CodecRules(Vec<CodecRule>);

/// Parses `PATTERN=CODEC` rules separated by commas or spaces, such as
/// `orders:*=kryo,audit-?=json`.
pub(crate) fn parse_codec_rules(spec: &str) -> Result<CodecRules, String> {
    let items = spec.split([',', ' ', '\t', '\n']).filter(|s| !s.is_empty());
    let rules = items
        .map(|item| {
            let (pattern, codec) = item
                .rsplit_once('=')
                .filter(|(pattern, _)| !pattern.is_empty())
                .ok_or_else(|| format!("{item:?} is no PATTERN=CODEC (like 'orders:*=kryo')"))?;
            let codec = <CodecName as clap::ValueEnum>::from_str(codec, true).map_err(|_| {
                let names: Vec<String> = <CodecName as clap::ValueEnum>::value_variants()
                    .iter()
                    .filter_map(clap::ValueEnum::to_possible_value)
                    .map(|c| c.get_name().to_owned())
                    .collect();
                format!("{item:?}: no codec {codec:?} (one of {})", names.join(", "))
            })?;
            Ok(CodecRule {
                pattern: pattern.to_owned(),
                codec,
            })
        })
        .collect::<Result<Vec<_>, String>>()?;
    if rules.is_empty() {
        return Err("no PATTERN=CODEC given (like 'orders:*=kryo')".into());
    }
    Ok(CodecRules(rules))
}

/// The codec of every queue.
#[derive(Debug, Clone)]
pub(crate) struct Codecs {
    default: TextCodec,
    rules: Vec<(String, TextCodec)>,
}

impl Codecs {
    /// `--codec` as the default, `--codec-for`'s rules in their order, `--java-class` for those
    /// of them it goes with (JSON and msgpack; a usage error when it goes with none).
    pub(crate) fn new(
        default: CodecName,
        rules: &[CodecRules],
        java_class: Option<String>,
    ) -> Result<Self, String> {
        let rules: Vec<&CodecRule> = rules.iter().flat_map(|r| &r.0).collect();
        let java_class_for = |name| {
            java_class
                .clone()
                .filter(|_| TextCodec::takes_java_class(name))
        };
        let any_takes_it = std::iter::once(default)
            .chain(rules.iter().map(|r| r.codec))
            .any(TextCodec::takes_java_class);
        let default = match any_takes_it {
            true => TextCodec::new(default, java_class_for(default))?,
            false => TextCodec::new(default, java_class.clone())?,
        };
        let rules = rules
            .into_iter()
            .map(|r| {
                Ok((
                    r.pattern.clone(),
                    TextCodec::new(r.codec, java_class_for(r.codec))?,
                ))
            })
            .collect::<Result<_, String>>()?;
        Ok(Codecs { default, rules })
    }

    /// The codec of the queue `name`; a shard (`QUEUE:{N}`) goes by its sharded queue's name
    /// when its own matches no pattern.
    pub(crate) fn of(&self, name: &str) -> &TextCodec {
        let names = std::iter::once(name).chain(delayq::names::logical_queue(name));
        names
            .flat_map(|name| {
                let rules = self.rules.iter();
                rules.filter(move |(pattern, _)| delayq::names::glob_match(pattern, name))
            })
            .map(|(_, codec)| codec)
            .next()
            .unwrap_or(&self.default)
    }

    /// `--codec`: the codec of queues no pattern matches.
    pub(crate) fn default(&self) -> &TextCodec {
        &self.default
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use delayq::codec::Codec;

    #[test]
    fn first_matching_pattern_wins_else_the_default() {
        let rules = [
            parse_codec_rules("orders:*=kryo, orders:eu=json").unwrap(),
            parse_codec_rules("audit-?=detect").unwrap(),
        ];
        let codecs = Codecs::new(CodecName::String, &rules, None).unwrap();
        let name = |queue| codecs.of(queue).name();
        assert_eq!(name("orders:eu"), "kryo");
        assert_eq!(name("audit-1"), "auto");
        assert_eq!(name("audit-12"), "string");
        assert_eq!(name("orders:x:{3}"), "kryo");
    }

    #[test]
    fn bad_rules_are_refused() {
        for spec in ["orders", "=kryo", "orders=yaml", " , "] {
            assert!(parse_codec_rules(spec).is_err(), "{spec:?}");
        }
        let json = [parse_codec_rules("a=json").unwrap()];
        assert!(Codecs::new(CodecName::String, &json, Some("X".into())).is_ok());
        assert!(Codecs::new(CodecName::String, &[], Some("X".into())).is_err());
    }
}
