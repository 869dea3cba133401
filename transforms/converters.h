// Converters at the backbone boundary: ByteArrayConverter (identity), StringConverter (identity;
// only UTF-8 is accepted as encoding), JsonConverter (checks that data is JSON; with
// schemas.enable=true, like Kafka's default, wraps it as {"schema":null,"payload":...} on the
// way in and unwraps the payload on the way out).
//
// Threading: one instance per task side, called from that task's thread only.
#pragma once

#include <string>

#include "ferry/transform.h"

namespace ferry::transforms {

class ByteArrayConverter final : public Converter {
 public:
  static const ConfigDef& definition();
  const ConfigDef& configDef() const override { return definition(); }
  Status configure(const StringMap& config, bool isKey) override;
  Result<Bytes> fromRecord(const std::string& topic, const Bytes& data) override;
  Result<Bytes> toRecord(const std::string& topic, const Bytes& data) override;
};

class StringConverter final : public Converter {
 public:
  static const ConfigDef& definition();
  const ConfigDef& configDef() const override { return definition(); }
  Status configure(const StringMap& config, bool isKey) override;
  Result<Bytes> fromRecord(const std::string& topic, const Bytes& data) override;
  Result<Bytes> toRecord(const std::string& topic, const Bytes& data) override;
};

class JsonConverter final : public Converter {
 public:
  static const ConfigDef& definition();
  const ConfigDef& configDef() const override { return definition(); }
  Status configure(const StringMap& config, bool isKey) override;
  Result<Bytes> fromRecord(const std::string& topic, const Bytes& data) override;
  Result<Bytes> toRecord(const std::string& topic, const Bytes& data) override;

 private:
  Status notJson(const std::string& topic, const Bytes& data, const char* direction) const;
  bool schemasEnable_ = true;
  bool isKey_ = false;
};

}  // namespace ferry::transforms
