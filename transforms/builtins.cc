// The built-in transforms', predicates' and converters' plugin descriptor (see builtins.h).
// Everything here is constant initialised: no code runs before builtinPlugins() is called.
// Each class also answers to its Kafka Connect name, so Kafka configs work unchanged.
#include "transforms/builtins.h"

#include "ferry/transform.h"
#include "transforms/cloudevents.h"
#include "transforms/converters.h"
#include "transforms/field_transforms.h"
#include "transforms/predicates.h"
#include "transforms/record_transforms.h"
#include "transforms/rules/rule_transform.h"
#include "transforms/structure_transforms.h"
#include "transforms/iot_transforms.h"
#include "transforms/json_path_transforms.h"
#include "transforms/schema_transforms.h"
#include "transforms/time_transforms.h"

namespace ferry::transforms {
namespace {

constexpr const char* kVersion = "0.1.0";

#define FERRY_KAFKA_ALIAS(var, fqcn) constexpr const char* var[] = {fqcn, nullptr}
FERRY_KAFKA_ALIAS(kHoistValue, "org.apache.kafka.connect.transforms.HoistField$Value");
FERRY_KAFKA_ALIAS(kHoistKey, "org.apache.kafka.connect.transforms.HoistField$Key");
FERRY_KAFKA_ALIAS(kInsertValue, "org.apache.kafka.connect.transforms.InsertField$Value");
FERRY_KAFKA_ALIAS(kInsertKey, "org.apache.kafka.connect.transforms.InsertField$Key");
FERRY_KAFKA_ALIAS(kReplaceValue, "org.apache.kafka.connect.transforms.ReplaceField$Value");
FERRY_KAFKA_ALIAS(kReplaceKey, "org.apache.kafka.connect.transforms.ReplaceField$Key");
FERRY_KAFKA_ALIAS(kMaskValue, "org.apache.kafka.connect.transforms.MaskField$Value");
FERRY_KAFKA_ALIAS(kMaskKey, "org.apache.kafka.connect.transforms.MaskField$Key");
FERRY_KAFKA_ALIAS(kExtractValue, "org.apache.kafka.connect.transforms.ExtractField$Value");
FERRY_KAFKA_ALIAS(kExtractKey, "org.apache.kafka.connect.transforms.ExtractField$Key");
FERRY_KAFKA_ALIAS(kValueToKey, "org.apache.kafka.connect.transforms.ValueToKey");
FERRY_KAFKA_ALIAS(kRegexRouter, "org.apache.kafka.connect.transforms.RegexRouter");
FERRY_KAFKA_ALIAS(kTimestampRouter, "org.apache.kafka.connect.transforms.TimestampRouter");
FERRY_KAFKA_ALIAS(kInsertHeader, "org.apache.kafka.connect.transforms.InsertHeader");
FERRY_KAFKA_ALIAS(kDropHeaders, "org.apache.kafka.connect.transforms.DropHeaders");
FERRY_KAFKA_ALIAS(kFilter, "org.apache.kafka.connect.transforms.Filter");
FERRY_KAFKA_ALIAS(kFlattenValue, "org.apache.kafka.connect.transforms.Flatten$Value");
FERRY_KAFKA_ALIAS(kFlattenKey, "org.apache.kafka.connect.transforms.Flatten$Key");
FERRY_KAFKA_ALIAS(kCastValue, "org.apache.kafka.connect.transforms.Cast$Value");
FERRY_KAFKA_ALIAS(kCastKey, "org.apache.kafka.connect.transforms.Cast$Key");
FERRY_KAFKA_ALIAS(kHeaderFromValue, "org.apache.kafka.connect.transforms.HeaderFrom$Value");
FERRY_KAFKA_ALIAS(kHeaderFromKey, "org.apache.kafka.connect.transforms.HeaderFrom$Key");
FERRY_KAFKA_ALIAS(kDecodeValue, "io.ferry.transforms.DecodePayload$Value");  // no Kafka Connect counterpart
FERRY_KAFKA_ALIAS(kDecodeKey, "io.ferry.transforms.DecodePayload$Key");
FERRY_KAFKA_ALIAS(kTopicLevelRouter, "io.ferry.transforms.TopicLevelRouter");
FERRY_KAFKA_ALIAS(kSample, "io.ferry.transforms.Sample");
FERRY_KAFKA_ALIAS(kTimestampConverterValue, "org.apache.kafka.connect.transforms.TimestampConverter$Value");
FERRY_KAFKA_ALIAS(kTimestampConverterKey, "org.apache.kafka.connect.transforms.TimestampConverter$Key");
FERRY_KAFKA_ALIAS(kSetSchemaMetadataValue, "org.apache.kafka.connect.transforms.SetSchemaMetadata$Value");
FERRY_KAFKA_ALIAS(kSetSchemaMetadataKey, "org.apache.kafka.connect.transforms.SetSchemaMetadata$Key");
FERRY_KAFKA_ALIAS(kJsonPathValue, "io.ferry.transforms.JsonPathExtract$Value");  // no Kafka Connect counterpart
FERRY_KAFKA_ALIAS(kJsonPathKey, "io.ferry.transforms.JsonPathExtract$Key");
FERRY_KAFKA_ALIAS(kTopicNameMatches, "org.apache.kafka.connect.transforms.predicates.TopicNameMatches");
FERRY_KAFKA_ALIAS(kHasHeaderKey, "org.apache.kafka.connect.transforms.predicates.HasHeaderKey");
FERRY_KAFKA_ALIAS(kRecordIsTombstone, "org.apache.kafka.connect.transforms.predicates.RecordIsTombstone");
FERRY_KAFKA_ALIAS(kByteArray, "org.apache.kafka.connect.converters.ByteArrayConverter");
FERRY_KAFKA_ALIAS(kString, "org.apache.kafka.connect.storage.StringConverter");
FERRY_KAFKA_ALIAS(kJson, "org.apache.kafka.connect.json.JsonConverter");
FERRY_KAFKA_ALIAS(kSimpleHeader, "org.apache.kafka.connect.storage.SimpleHeaderConverter");
FERRY_KAFKA_ALIAS(kShortConv, "org.apache.kafka.connect.converters.ShortConverter");
FERRY_KAFKA_ALIAS(kIntegerConv, "org.apache.kafka.connect.converters.IntegerConverter");
FERRY_KAFKA_ALIAS(kLongConv, "org.apache.kafka.connect.converters.LongConverter");
FERRY_KAFKA_ALIAS(kFloatConv, "org.apache.kafka.connect.converters.FloatConverter");
FERRY_KAFKA_ALIAS(kDoubleConv, "org.apache.kafka.connect.converters.DoubleConverter");
FERRY_KAFKA_ALIAS(kBooleanConv, "org.apache.kafka.connect.converters.BooleanConverter");
FERRY_KAFKA_ALIAS(kRule, "io.ferry.transforms.Rule");  // no Kafka Connect counterpart
FERRY_KAFKA_ALIAS(kCloudEvent, "io.ferry.transforms.CloudEvent");  // no Kafka Connect counterpart
// Kafka Connect has no CloudEvents converter (the CloudEvents SDK ships Kafka serializers only).
FERRY_KAFKA_ALIAS(kCloudEventsConv, "io.ferry.converters.CloudEventsConverter");
#undef FERRY_KAFKA_ALIAS

template <typename Impl>
constexpr PluginEntry transform(const char* name, const char* const* aliases, const char* summary) {
  return {name, aliases, PluginKind::kTransform, kVersion, summary, &pluginCreate<Impl, Transform>,
          &pluginDestroy<Transform>};
}
template <typename Impl>
constexpr PluginEntry predicate(const char* name, const char* const* aliases, const char* summary) {
  return {name, aliases, PluginKind::kPredicate, kVersion, summary, &pluginCreate<Impl, Predicate>,
          &pluginDestroy<Predicate>};
}
template <typename Impl>
constexpr PluginEntry converter(const char* name, const char* const* aliases, const char* summary) {
  return {name, aliases, PluginKind::kConverter, kVersion, summary, &pluginCreate<Impl, Converter>,
          &pluginDestroy<Converter>};
}

constexpr PluginEntry kEntries[] = {
    transform<Sided<HoistField, false>>("HoistField$Value", kHoistValue,
                                        "Wraps the value into a JSON object under one field"),
    transform<Sided<HoistField, true>>("HoistField$Key", kHoistKey,
                                       "Wraps the key into a JSON object under one field"),
    transform<Sided<InsertField, false>>("InsertField$Value", kInsertValue,
                                         "Adds topic, queue, offset, timestamp or fixed fields to a JSON value"),
    transform<Sided<InsertField, true>>("InsertField$Key", kInsertKey,
                                        "Adds topic, queue, offset, timestamp or fixed fields to a JSON key"),
    transform<Sided<ReplaceField, false>>("ReplaceField$Value", kReplaceValue,
                                          "Keeps, drops and renames fields of a JSON value"),
    transform<Sided<ReplaceField, true>>("ReplaceField$Key", kReplaceKey,
                                         "Keeps, drops and renames fields of a JSON key"),
    transform<Sided<MaskField, false>>("MaskField$Value", kMaskValue,
                                       "Masks fields of a JSON value"),
    transform<Sided<MaskField, true>>("MaskField$Key", kMaskKey, "Masks fields of a JSON key"),
    transform<Sided<ExtractField, false>>("ExtractField$Value", kExtractValue,
                                          "Replaces a JSON value by one of its fields"),
    transform<Sided<ExtractField, true>>("ExtractField$Key", kExtractKey,
                                         "Replaces a JSON key by one of its fields"),
    transform<ValueToKey>("ValueToKey", kValueToKey,
                          "Sets the key to a JSON object of fields of the value"),
    transform<RegexRouter>("RegexRouter", kRegexRouter, "Renames topics matching a regex"),
    transform<TimestampRouter>("TimestampRouter", kTimestampRouter,
                               "Renames the topic after the record's timestamp"),
    transform<InsertHeader>("InsertHeader", kInsertHeader, "Adds a header with a fixed value"),
    transform<DropHeaders>("DropHeaders", kDropHeaders, "Removes headers by name"),
    transform<Filter>("Filter", kFilter, "Drops records (use with a predicate)"),
    transform<Sided<Flatten, false>>("Flatten$Value", kFlattenValue, "Flattens nested JSON objects of the value"),
    transform<Sided<Flatten, true>>("Flatten$Key", kFlattenKey, "Flattens nested JSON objects of the key"),
    transform<Sided<Cast, false>>("Cast$Value", kCastValue, "Casts the value or fields of it to another type"),
    transform<Sided<Cast, true>>("Cast$Key", kCastKey, "Casts the key or fields of it to another type"),
    transform<Sided<HeaderFrom, false>>("HeaderFrom$Value", kHeaderFromValue, "Copies or moves fields of the value into headers"),
    transform<Sided<HeaderFrom, true>>("HeaderFrom$Key", kHeaderFromKey, "Copies or moves fields of the key into headers"),
    transform<Sided<DecodePayload, false>>("DecodePayload$Value", kDecodeValue, "Decodes base64 or hex text in the value"),
    transform<Sided<DecodePayload, true>>("DecodePayload$Key", kDecodeKey, "Decodes base64 or hex text in the key"),
    transform<TopicLevelRouter>("TopicLevelRouter", kTopicLevelRouter, "Routes by levels of the MQTT topic"),
    transform<Sample>("Sample", kSample, "Keeps one record in N, or at most N records per second"),
    transform<Sided<TimestampConverter, false>>("TimestampConverter$Value", kTimestampConverterValue,
                                                "Converts a timestamp in the value between unix, string and epoch-millisecond forms"),
    transform<Sided<TimestampConverter, true>>("TimestampConverter$Key", kTimestampConverterKey,
                                               "Converts a timestamp in the key between unix, string and epoch-millisecond forms"),
    transform<Sided<SetSchemaMetadata, false>>("SetSchemaMetadata$Value", kSetSchemaMetadataValue,
                                               "Sets the schema name/version of the value (its JSON envelope, else headers)"),
    transform<Sided<SetSchemaMetadata, true>>("SetSchemaMetadata$Key", kSetSchemaMetadataKey,
                                              "Sets the schema name/version of the key (its JSON envelope, else headers)"),
    transform<Sided<JsonPathExtract, false>>("JsonPathExtract$Value", kJsonPathValue,
                                             "Replaces a JSON value by what a path (a.b[0].c) selects in it"),
    transform<Sided<JsonPathExtract, true>>("JsonPathExtract$Key", kJsonPathKey,
                                            "Replaces a JSON key by what a path (a.b[0].c) selects in it"),
    transform<RuleTransform>("Rule", kRule,
                             "An EMQX-style rule: SELECT ... FROM \"<MQTT topic filter>\" WHERE ...; "
                             "keeps matching records with the selected fields as a JSON value"),
    transform<CloudEvent>("CloudEvent", kCloudEvent,
                          "Wraps the record as a CloudEvent 1.0 (structured JSON value or binary ce_* headers)"),
    predicate<TopicNameMatches>("TopicNameMatches", kTopicNameMatches,
                                "True when the topic matches a regex"),
    predicate<HasHeaderKey>("HasHeaderKey", kHasHeaderKey, "True when a header is present"),
    predicate<RecordIsTombstone>("RecordIsTombstone", kRecordIsTombstone,
                                 "True when the value is null"),
    converter<ByteArrayConverter>("ByteArrayConverter", kByteArray, "Passes bytes through"),
    converter<StringConverter>("StringConverter", kString, "Passes UTF-8 text through"),
    converter<JsonConverter>("JsonConverter", kJson,
                             "Checks JSON; optionally wraps it in a schema/payload envelope"),
    converter<SimpleHeaderConverter>("SimpleHeaderConverter", kSimpleHeader,
                                     "Passes header values through as text (the default header converter)"),
    converter<ShortConverter>("ShortConverter", kShortConv, "Decimal text <-> 2-byte big-endian integer"),
    converter<IntegerConverter>("IntegerConverter", kIntegerConv, "Decimal text <-> 4-byte big-endian integer"),
    converter<LongConverter>("LongConverter", kLongConv, "Decimal text <-> 8-byte big-endian integer"),
    converter<FloatConverter>("FloatConverter", kFloatConv, "Number text <-> 4-byte IEEE 754 float"),
    converter<DoubleConverter>("DoubleConverter", kDoubleConv, "Number text <-> 8-byte IEEE 754 double"),
    converter<BooleanConverter>("BooleanConverter", kBooleanConv, "true/false <-> one byte 1/0"),
    converter<CloudEventsConverter>("CloudEventsConverter", kCloudEventsConv,
                                    "Record values <-> CloudEvents 1.0 (structured JSON or binary ce_* headers)"),
};

}  // namespace

const PluginDescriptor& builtinPlugins() {
  static constexpr PluginDescriptor kDescriptor =
      makePluginDescriptor("ferry-builtin-transforms", kVersion, kEntries);
  return kDescriptor;
}

}  // namespace ferry::transforms
