// Unit tests of the plugin registry (src/runtime/plugins.cc): handcrafted descriptors (ABI and
// size checks, duplicates, lookups, kinds, ownership) and real shared libraries (the test plugins
// of tests/plugins/ and a library without the plugin symbol).
#include "runtime/plugins.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <stdexcept>

namespace ferry::runtime {
namespace {

namespace fs = std::filesystem;

// ------------------------------------------------------------------------------------------------
// Handcrafted plugins

std::atomic<int> g_created{0};
std::atomic<int> g_destroyed{0};

const ConfigDef& emptyDef() {
  static const ConfigDef def;
  return def;
}

class FakeSourceTask final : public SourceTask {
 public:
  Status start(const StringMap&, SourceTaskContext&) override { return Status::ok(); }
  Result<std::size_t> poll(std::vector<Record>&, std::size_t, std::chrono::milliseconds) override {
    return std::size_t{0};
  }
  void stop() override {}
};

class FakeSource final : public SourceConnector {
 public:
  std::string version() const override { return "fake-source-1"; }
  const ConfigDef& configDef() const override { return emptyDef(); }
  Status start(const StringMap&, ConnectorContext&) override { return Status::ok(); }
  Result<std::vector<StringMap>> taskConfigs(int) override { return std::vector<StringMap>{}; }
  void stop() override {}
  std::unique_ptr<SourceTask> createTask() override { return std::make_unique<FakeSourceTask>(); }
};

class FakeSinkTask final : public SinkTask {
 public:
  Status start(const StringMap&, SinkTaskContext&) override { return Status::ok(); }
  Status put(std::vector<Record>&) override { return Status::ok(); }
  Status flush() override { return Status::ok(); }
  void stop() override {}
};

class FakeSink final : public SinkConnector {
 public:
  std::string version() const override { return "fake-sink-1"; }
  const ConfigDef& configDef() const override { return emptyDef(); }
  Status start(const StringMap&, ConnectorContext&) override { return Status::ok(); }
  Result<std::vector<StringMap>> taskConfigs(int) override { return std::vector<StringMap>{}; }
  void stop() override {}
  std::unique_ptr<SinkTask> createTask() override { return std::make_unique<FakeSinkTask>(); }
};

class FakeTransform final : public Transform {
 public:
  const ConfigDef& configDef() const override { return emptyDef(); }
  Status configure(const StringMap&) override { return Status::ok(); }
  Result<bool> apply(Record& r) override {
    r.topic = "transformed";
    return true;
  }
};

class FakePredicate final : public Predicate {
 public:
  const ConfigDef& configDef() const override { return emptyDef(); }
  Status configure(const StringMap&) override { return Status::ok(); }
  Result<bool> test(const Record& r) override { return r.topic == "yes"; }
};

class FakeConverter final : public Converter {
 public:
  const ConfigDef& configDef() const override { return emptyDef(); }
  Status configure(const StringMap&, bool) override { return Status::ok(); }
  Result<Bytes> fromRecord(const std::string&, const Bytes& d) override { return d; }
  Result<Bytes> toRecord(const std::string&, const Bytes& d) override { return d; }
};

// Factories that count, so the tests can see that every instance goes back to destroy().
template <typename Impl, typename Base>
void* countingCreate() {
  ++g_created;
  return static_cast<Base*>(new Impl());
}
template <typename Base>
void countingDestroy(void* p) {
  ++g_destroyed;
  delete static_cast<Base*>(p);
}

void* throwingCreate() { throw std::runtime_error("no memory today"); }
void* nullCreate() { return nullptr; }

const char* const kSourceAliases[] = {"Fake", "FakeSrc", nullptr};

const PluginEntry kFakeEntries[] = {
    {"FakeSource", kSourceAliases, PluginKind::kSourceConnector, "1.2.3", "a fake source",
     &countingCreate<FakeSource, SourceConnector>, &countingDestroy<SourceConnector>},
    {"FakeSink", nullptr, PluginKind::kSinkConnector, "1.2.3", "a fake sink",
     &countingCreate<FakeSink, SinkConnector>, &countingDestroy<SinkConnector>},
    {"FakeTransform", nullptr, PluginKind::kTransform, nullptr, nullptr,
     &countingCreate<FakeTransform, Transform>, &countingDestroy<Transform>},
    {"FakePredicate", nullptr, PluginKind::kPredicate, "1", "p",
     &countingCreate<FakePredicate, Predicate>, &countingDestroy<Predicate>},
    {"FakeConverter", nullptr, PluginKind::kConverter, "1", "c",
     &countingCreate<FakeConverter, Converter>, &countingDestroy<Converter>},
};
const PluginDescriptor kFakeDescriptor = makePluginDescriptor("fakes", "9.9", kFakeEntries);

class RegistryTest : public testing::Test {
 protected:
  void SetUp() override {
    g_created = 0;
    g_destroyed = 0;
    ASSERT_TRUE(registry_.add(&kFakeDescriptor, "builtin").isOk());
  }
  PluginRegistry registry_;
};

// ------------------------------------------------------------------------------------------------
// Handcrafted descriptors

TEST(PluginKindNames, AreTheDocumentedOnes) {
  EXPECT_STREQ(pluginKindName(PluginKind::kSourceConnector), "source");
  EXPECT_STREQ(pluginKindName(PluginKind::kSinkConnector), "sink");
  EXPECT_STREQ(pluginKindName(PluginKind::kTransform), "transformation");
  EXPECT_STREQ(pluginKindName(PluginKind::kPredicate), "predicate");
  EXPECT_STREQ(pluginKindName(PluginKind::kConverter), "converter");
}

TEST_F(RegistryTest, ListsWhatWasAdded) {
  auto all = registry_.list();
  ASSERT_EQ(all.size(), 5u);
  // Sorted by class name.
  EXPECT_EQ(all[0].className, "FakeConverter");
  EXPECT_EQ(all[4].className, "FakeTransform");
  auto info = registry_.find("FakeSource");
  ASSERT_TRUE(info.isOk());
  EXPECT_EQ(info->kind, PluginKind::kSourceConnector);
  EXPECT_EQ(info->version, "1.2.3");
  EXPECT_EQ(info->summary, "a fake source");
  EXPECT_EQ(info->origin, "builtin");
  EXPECT_EQ(info->aliases, (std::vector<std::string>{"Fake", "FakeSrc"}));
  // An entry without its own version takes the plugin's.
  auto t = registry_.find("FakeTransform");
  ASSERT_TRUE(t.isOk());
  EXPECT_EQ(t->version, "9.9");
  EXPECT_EQ(t->summary, "");
}

TEST_F(RegistryTest, FindsByAlias) {
  auto info = registry_.find("FakeSrc");
  ASSERT_TRUE(info.isOk());
  EXPECT_EQ(info->className, "FakeSource");
  EXPECT_TRUE(registry_.isConnector("Fake"));
  EXPECT_TRUE(registry_.isConnector("FakeSink"));
  EXPECT_FALSE(registry_.isConnector("FakeTransform"));
  EXPECT_FALSE(registry_.isConnector("Nope"));
}

TEST_F(RegistryTest, UnknownNameListsKnownConnectors) {
  auto info = registry_.find("Foo");
  ASSERT_FALSE(info.isOk());
  EXPECT_EQ(info.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(info.status().message(), "unknown connector class 'Foo'; known: FakeSink, FakeSource");
  auto t = registry_.createTransform("Bar");
  ASSERT_FALSE(t.isOk());
  EXPECT_EQ(t.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(t.status().message(), "unknown transformation 'Bar'; known: FakeTransform");
  PluginRegistry empty;
  auto none = empty.createSourceConnector("X");
  ASSERT_FALSE(none.isOk());
  EXPECT_EQ(none.status().message(), "unknown connector class 'X'; known: (none)");
}

TEST_F(RegistryTest, WrongKindIsRefusedWithoutCreating) {
  auto a = registry_.createSourceConnector("FakeTransform");
  ASSERT_FALSE(a.isOk());
  EXPECT_EQ(a.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(a.status().message(), "'FakeTransform' is a transformation, not a source connector");
  auto b = registry_.createSinkConnector("FakeSource");
  ASSERT_FALSE(b.isOk());
  EXPECT_EQ(b.status().message(), "'FakeSource' is a source connector, not a sink connector");
  auto c = registry_.createTransform("FakeSink");
  ASSERT_FALSE(c.isOk());
  EXPECT_EQ(c.status().message(), "'FakeSink' is a sink connector, not a transformation");
  auto d = registry_.createConnector("FakePredicate");
  ASSERT_FALSE(d.isOk());
  EXPECT_EQ(d.status().message(), "'FakePredicate' is a predicate, not a connector");
  auto e = registry_.createConverter("FakeTransform");
  ASSERT_FALSE(e.isOk());
  auto f = registry_.createPredicate("FakeConverter");
  ASSERT_FALSE(f.isOk());
  EXPECT_EQ(f.status().message(), "'FakeConverter' is a converter, not a predicate");
  EXPECT_EQ(g_created.load(), 0);
}

TEST_F(RegistryTest, CreatesEachKindAndDestroysThroughThePlugin) {
  {
    auto src = registry_.createSourceConnector("Fake");
    ASSERT_TRUE(src.isOk()) << src.status().toString();
    EXPECT_EQ((*src)->version(), "fake-source-1");
    auto task = (*src)->createTask();
    EXPECT_NE(task, nullptr);
    auto sink = registry_.createSinkConnector("FakeSink");
    ASSERT_TRUE(sink.isOk());
    EXPECT_EQ((*sink)->version(), "fake-sink-1");
    auto anySrc = registry_.createConnector("FakeSource");
    ASSERT_TRUE(anySrc.isOk());
    EXPECT_EQ((*anySrc)->version(), "fake-source-1");
    auto anySink = registry_.createConnector("FakeSink");
    ASSERT_TRUE(anySink.isOk());
    EXPECT_EQ((*anySink)->version(), "fake-sink-1");
    auto tr = registry_.createTransform("FakeTransform");
    ASSERT_TRUE(tr.isOk());
    Record r;
    auto kept = (*tr)->apply(r);
    ASSERT_TRUE(kept.isOk());
    EXPECT_EQ(r.topic, "transformed");
    auto pr = registry_.createPredicate("FakePredicate");
    ASSERT_TRUE(pr.isOk());
    r.topic = "yes";
    EXPECT_TRUE((*pr)->test(r).valueOr(false));
    auto cv = registry_.createConverter("FakeConverter");
    ASSERT_TRUE(cv.isOk());
    EXPECT_EQ(g_created.load(), 7);
    EXPECT_EQ(g_destroyed.load(), 0);
  }
  EXPECT_EQ(g_destroyed.load(), 7);
}

TEST_F(RegistryTest, DuplicateClassNameAddsNothing) {
  const PluginEntry entries[] = {
      {"Beta", nullptr, PluginKind::kTransform, "1", "", &countingCreate<FakeTransform, Transform>,
       &countingDestroy<Transform>},
      {"FakeSink", nullptr, PluginKind::kSinkConnector, "1", "",
       &countingCreate<FakeSink, SinkConnector>, &countingDestroy<SinkConnector>},
  };
  const PluginDescriptor d = makePluginDescriptor("dup", "1", entries);
  Status s = registry_.add(&d, "/plugins/dup.so");
  EXPECT_EQ(s.code(), StatusCode::kAlreadyExists);
  EXPECT_NE(s.message().find("FakeSink"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("/plugins/dup.so"), std::string::npos) << s.message();
  EXPECT_FALSE(registry_.find("Beta").isOk());
  EXPECT_FALSE(registry_.createTransform("Beta").isOk());
  EXPECT_EQ(registry_.list().size(), 5u);
  // The original is untouched.
  auto sink = registry_.find("FakeSink");
  ASSERT_TRUE(sink.isOk());
  EXPECT_EQ(sink->origin, "builtin");
}

TEST_F(RegistryTest, AliasClashesAreDuplicatesToo) {
  const char* const aliases[] = {"FakeSrc", nullptr};  // an alias of FakeSource
  const PluginEntry entries[] = {
      {"Gamma", aliases, PluginKind::kTransform, "1", "", &countingCreate<FakeTransform, Transform>,
       &countingDestroy<Transform>},
  };
  const PluginDescriptor d = makePluginDescriptor("alias", "1", entries);
  EXPECT_EQ(registry_.add(&d, "x").code(), StatusCode::kAlreadyExists);
  EXPECT_FALSE(registry_.createTransform("Gamma").isOk());

  // A class name equal to an existing alias.
  const PluginEntry entries2[] = {
      {"Fake", nullptr, PluginKind::kTransform, "1", "", &countingCreate<FakeTransform, Transform>,
       &countingDestroy<Transform>},
  };
  const PluginDescriptor d2 = makePluginDescriptor("alias2", "1", entries2);
  EXPECT_EQ(registry_.add(&d2, "y").code(), StatusCode::kAlreadyExists);
  EXPECT_EQ(registry_.find("Fake")->className, "FakeSource");
}

// addExternal(): the JVM host's connectors (src/jvm/java_plugins.h).
TEST_F(RegistryTest, ExternalConnectorTakesOverAnAliasNotAClassName) {
  int made = 0, released = 0;
  auto create = [&]() -> void* {
    ++made;
    return static_cast<SinkConnector*>(new FakeSink());
  };
  auto destroy = [&](void* p) {
    ++released;
    delete static_cast<SinkConnector*>(p);
  };
  PluginInfo info;
  info.className = "FakeSrc";  // FakeSource's alias: the real class takes the name
  info.kind = PluginKind::kSinkConnector;
  info.version = "4.1.1";
  info.origin = "/plugins/x";
  ASSERT_TRUE(registry_.addExternal(info, create, destroy).isOk());
  auto found = registry_.find("FakeSrc");
  ASSERT_TRUE(found.isOk());
  EXPECT_EQ(found->className, "FakeSrc");
  EXPECT_EQ(found->origin, "/plugins/x");
  EXPECT_EQ(registry_.find("FakeSource")->aliases, std::vector<std::string>{"Fake"});  // the alias is gone
  {
    auto c = registry_.createSinkConnector("FakeSrc");
    ASSERT_TRUE(c.isOk()) << c.status().toString();
    EXPECT_EQ((*c)->version(), "fake-sink-1");
  }
  EXPECT_EQ(made, 1);
  EXPECT_EQ(released, 1);  // back through the external destroy
  // Another class's own name is refused; a factory that makes nothing is an error, not a crash.
  info.className = "FakeSink";
  EXPECT_EQ(registry_.addExternal(info, create, destroy).code(), StatusCode::kAlreadyExists);
  info.className = "Nothing";
  ASSERT_TRUE(registry_.addExternal(info, [] { return static_cast<void*>(nullptr); }, destroy).isOk());
  EXPECT_EQ(registry_.createSinkConnector("Nothing").status().code(), StatusCode::kInternal);
  info.className = "Transformy";
  info.kind = PluginKind::kTransform;
  EXPECT_EQ(registry_.addExternal(info, create, destroy).code(), StatusCode::kInvalidArgument);
}

TEST_F(RegistryTest, UnknownConnectorErrorsCarryTheHint) {
  registry_.setUnknownConnectorHint("plugin.path holds 2 Java jar(s), but no Java runtime was found");
  auto c = registry_.createConnector("io.debezium.connector.postgresql.PostgresConnector");
  EXPECT_EQ(c.status().code(), StatusCode::kNotFound);
  EXPECT_NE(c.status().message().find("but no Java runtime was found"), std::string::npos) << c.status().toString();
  // Only for connector classes.
  EXPECT_EQ(registry_.createTransform("Nope").status().message().find("Java"), std::string::npos);
}

TEST(Registry, DuplicateInsideOneDescriptorAddsNothing) {
  const PluginEntry entries[] = {
      {"Same", nullptr, PluginKind::kTransform, "1", "", &countingCreate<FakeTransform, Transform>,
       &countingDestroy<Transform>},
      {"Other", nullptr, PluginKind::kTransform, "1", "", &countingCreate<FakeTransform, Transform>,
       &countingDestroy<Transform>},
      {"Same", nullptr, PluginKind::kTransform, "1", "", &countingCreate<FakeTransform, Transform>,
       &countingDestroy<Transform>},
  };
  const PluginDescriptor d = makePluginDescriptor("dup", "1", entries);
  PluginRegistry registry;
  EXPECT_EQ(registry.add(&d, "x").code(), StatusCode::kAlreadyExists);
  EXPECT_TRUE(registry.list().empty());
}

TEST(Registry, AbiVersionMismatchIsIncompatibleBeforeAnythingIsRead) {
  // Everything past the first three fields is garbage: the registry must not touch it.
  PluginDescriptor d{};
  d.abiVersion = 999;
  d.descriptorSize = sizeof(PluginDescriptor);
  d.entrySize = sizeof(PluginEntry);
  d.pluginName = reinterpret_cast<const char*>(0x10);
  d.entries = reinterpret_cast<const PluginEntry*>(0x20);
  d.entryCount = 1'000'000;
  PluginRegistry registry;
  Status s = registry.add(&d, "/opt/ferry/plugins/old.so");
  EXPECT_EQ(s.code(), StatusCode::kIncompatible);
  std::string expected =
      "plugin /opt/ferry/plugins/old.so was built for ferry plugin ABI 999 (descriptor " +
      std::to_string(sizeof(PluginDescriptor)) + " bytes, entry " +
      std::to_string(sizeof(PluginEntry)) + " bytes); this worker speaks ABI " +
      std::to_string(kAbiVersion) + " (" + std::to_string(sizeof(PluginDescriptor)) + "/" +
      std::to_string(sizeof(PluginEntry)) + " bytes): rebuild the plugin against this SDK";
  EXPECT_EQ(s.message(), expected);
  EXPECT_TRUE(registry.list().empty());
}

TEST(Registry, StructSizeMismatchIsIncompatible) {
  const PluginEntry entries[] = {
      {"Sized", nullptr, PluginKind::kTransform, "1", "", &countingCreate<FakeTransform, Transform>,
       &countingDestroy<Transform>},
  };
  PluginDescriptor d = makePluginDescriptor("sized", "1", entries);
  d.entrySize = sizeof(PluginEntry) + 8;
  PluginRegistry registry;
  Status s = registry.add(&d, "sized.so");
  EXPECT_EQ(s.code(), StatusCode::kIncompatible);
  EXPECT_NE(s.message().find("entry " + std::to_string(sizeof(PluginEntry) + 8) + " bytes"),
            std::string::npos)
      << s.message();
  EXPECT_NE(s.message().find("rebuild the plugin"), std::string::npos);
  EXPECT_TRUE(registry.list().empty());

  d.entrySize = sizeof(PluginEntry);
  d.descriptorSize = sizeof(PluginDescriptor) - 8;
  EXPECT_EQ(registry.add(&d, "sized.so").code(), StatusCode::kIncompatible);
  EXPECT_TRUE(registry.list().empty());
  // Fixed, it goes in.
  d.descriptorSize = sizeof(PluginDescriptor);
  EXPECT_TRUE(registry.add(&d, "sized.so").isOk());
  EXPECT_EQ(registry.list().size(), 1u);
}

TEST(Registry, MalformedEntriesAreRefused) {
  PluginRegistry registry;
  EXPECT_EQ(registry.add(nullptr, "null").code(), StatusCode::kInvalidArgument);
  const PluginEntry noCreate[] = {
      {"NoCreate", nullptr, PluginKind::kTransform, "1", "", nullptr, &countingDestroy<Transform>},
  };
  const PluginDescriptor d1 = makePluginDescriptor("bad", "1", noCreate);
  EXPECT_EQ(registry.add(&d1, "bad").code(), StatusCode::kInvalidArgument);
  const PluginEntry badKind[] = {
      {"BadKind", nullptr, static_cast<PluginKind>(77), "1", "",
       &countingCreate<FakeTransform, Transform>, &countingDestroy<Transform>},
  };
  const PluginDescriptor d2 = makePluginDescriptor("bad", "1", badKind);
  EXPECT_EQ(registry.add(&d2, "bad").code(), StatusCode::kInvalidArgument);
  const PluginEntry noName[] = {
      {nullptr, nullptr, PluginKind::kTransform, "1", "", &countingCreate<FakeTransform, Transform>,
       &countingDestroy<Transform>},
  };
  const PluginDescriptor d3 = makePluginDescriptor("bad", "1", noName);
  EXPECT_EQ(registry.add(&d3, "bad").code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(registry.list().empty());
}

TEST(Registry, FactoryFailuresAreErrorsNotCrashes) {
  const PluginEntry entries[] = {
      {"Thrower", nullptr, PluginKind::kTransform, "1", "", &throwingCreate,
       &countingDestroy<Transform>},
      {"Nothing", nullptr, PluginKind::kTransform, "1", "", &nullCreate,
       &countingDestroy<Transform>},
  };
  const PluginDescriptor d = makePluginDescriptor("failing", "1", entries);
  PluginRegistry registry;
  ASSERT_TRUE(registry.add(&d, "builtin").isOk());
  auto t = registry.createTransform("Thrower");
  ASSERT_FALSE(t.isOk());
  EXPECT_EQ(t.status().code(), StatusCode::kInternal);
  EXPECT_NE(t.status().message().find("no memory today"), std::string::npos);
  auto n = registry.createTransform("Nothing");
  ASSERT_FALSE(n.isOk());
  EXPECT_EQ(n.status().code(), StatusCode::kInternal);
}

TEST(Registry, RegisterBuiltinsSucceeds) {
  PluginRegistry registry;
  Status s = registerBuiltins(registry);
  EXPECT_TRUE(s.isOk()) << s.toString();
  for (const auto& info : registry.list()) EXPECT_EQ(info.origin, "builtin") << info.className;
}

// ------------------------------------------------------------------------------------------------
// Shared libraries

class TempDir {
 public:
  TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "ferry-plugins-XXXXXX").string();
    char* made = ::mkdtemp(tmpl.data());
    EXPECT_NE(made, nullptr);
    path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }
  std::string file(const std::string& name) const { return (fs::path(path_) / name).string(); }

 private:
  std::string path_;
};

class FakeTaskContext final : public SourceTaskContext {
 public:
  explicit FakeTaskContext(std::optional<StringMap> committed) : committed_(std::move(committed)) {}
  const std::string& connectorName() const override { return name_; }
  int taskId() const override { return 0; }
  std::optional<StringMap> committedOffset(const StringMap& partition) override {
    asked_ = partition;
    return committed_;
  }
  StringMap asked_;

 private:
  std::string name_ = "counter";
  std::optional<StringMap> committed_;
};

class FakeConnectorContext final : public ConnectorContext {
 public:
  const std::string& connectorName() const override { return name_; }
  void requestTaskReconfiguration() override {}
  void raiseError(const Status&) override {}

 private:
  std::string name_ = "counter";
};

TEST(SharedLibrary, GoodPluginLoadsAndItsTaskPolls) {
  PluginRegistry registry;
  Status loaded = registry.loadLibrary(GOOD_PLUGIN);
  ASSERT_TRUE(loaded.isOk()) << loaded.toString();
  auto info = registry.find("TestCounter");  // by alias
  ASSERT_TRUE(info.isOk()) << info.status().toString();
  EXPECT_EQ(info->className, "TestCounterSource");
  EXPECT_EQ(info->origin, GOOD_PLUGIN);
  EXPECT_EQ(info->kind, PluginKind::kSourceConnector);

  auto connector = registry.createSourceConnector("TestCounterSource");
  ASSERT_TRUE(connector.isOk()) << connector.status().toString();
  // The plugin's declared config is usable from here.
  EXPECT_NE((*connector)->configDef().find("topic"), nullptr);
  EXPECT_FALSE((*connector)->configDef().validate({}).ok());  // topic is required
  FakeConnectorContext cctx;
  ASSERT_TRUE((*connector)->start({{"topic", "numbers"}}, cctx).isOk());
  auto tasks = (*connector)->taskConfigs(3);
  ASSERT_TRUE(tasks.isOk());
  ASSERT_EQ(tasks->size(), 1u);

  auto task = (*connector)->createTask();
  ASSERT_NE(task, nullptr);
  FakeTaskContext tctx(StringMap{{"n", "4"}});
  ASSERT_TRUE(task->start(tasks->at(0), tctx).isOk());
  EXPECT_EQ(tctx.asked_, (StringMap{{"counter", "0"}}));
  std::vector<Record> out;
  auto n = task->poll(out, 3, std::chrono::milliseconds(0));
  ASSERT_TRUE(n.isOk());
  ASSERT_EQ(*n, 3u);
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(out[0].topic, "numbers");
  EXPECT_EQ(out[0].value.str(), "c-5");
  EXPECT_EQ(out[2].value.str(), "c-7");
  EXPECT_EQ(out[2].position.partition, (StringMap{{"counter", "0"}}));
  EXPECT_EQ(out[2].position.offset, (StringMap{{"n", "7"}}));

  auto upper = registry.createTransform("TestUpper");
  ASSERT_TRUE(upper.isOk()) << upper.status().toString();
  ASSERT_TRUE((*upper)->configure({}).isOk());
  auto kept = (*upper)->apply(out[0]);
  ASSERT_TRUE(kept.isOk());
  EXPECT_TRUE(*kept);
  EXPECT_EQ(out[0].value.str(), "C-5");
  task->stop();
  (*connector)->stop();
}

TEST(SharedLibrary, InstanceMayOutliveTheRegistry) {
  std::optional<PluginPtr<Transform>> kept;
  {
    PluginRegistry registry;
    ASSERT_TRUE(registry.loadLibrary(GOOD_PLUGIN).isOk());
    auto t = registry.createTransform("TestUpper");
    ASSERT_TRUE(t.isOk());
    kept.emplace(std::move(t).value());
  }
  Record r;
  r.value = Bytes(std::string("abc"));
  auto res = (*kept)->apply(r);  // the library's code is still mapped
  ASSERT_TRUE(res.isOk());
  EXPECT_EQ(r.value.str(), "ABC");
  kept.reset();
}

TEST(SharedLibrary, LoadingTheSameLibraryTwiceIsADuplicate) {
  PluginRegistry registry;
  ASSERT_TRUE(registry.loadLibrary(GOOD_PLUGIN).isOk());
  Status again = registry.loadLibrary(GOOD_PLUGIN);
  EXPECT_EQ(again.code(), StatusCode::kAlreadyExists);
  EXPECT_EQ(registry.list().size(), 2u);
}

TEST(SharedLibrary, BadAbiPluginRefused) {
  PluginRegistry registry;
  Status s = registry.loadLibrary(BAD_ABI_PLUGIN);
  EXPECT_EQ(s.code(), StatusCode::kIncompatible);
  EXPECT_NE(s.message().find("ABI 999"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find(BAD_ABI_PLUGIN), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("rebuild the plugin against this SDK"), std::string::npos);
  EXPECT_TRUE(registry.list().empty());
}

TEST(SharedLibrary, LibraryWithoutDescriptorIsNotAPlugin) {
  PluginRegistry registry;
  Status s = registry.loadLibrary(NOSYM_PLUGIN);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("is not a ferry plugin"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("ferry_plugin_descriptor"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find(NOSYM_PLUGIN), std::string::npos) << s.message();
}

TEST(SharedLibrary, FileThatIsNotALibrary) {
  TempDir dir;
  std::string fake = dir.file("notes.so");
  std::ofstream(fake) << "just text\n";
  PluginRegistry registry;
  Status s = registry.loadLibrary(fake);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("cannot load plugin " + fake), std::string::npos) << s.message();
  Status missing = registry.loadLibrary(dir.file("absent.so"));
  EXPECT_FALSE(missing.isOk());
  EXPECT_NE(missing.message().find("absent.so"), std::string::npos);
}

TEST(SharedLibrary, LoadPathReportsEachBadFileAndKeepsTheGoodOnes) {
  TempDir dir;
  // good at the top level, bad_abi in a sub-folder (one level down), and files that are skipped.
  fs::copy_file(GOOD_PLUGIN, dir.file("good_plugin.so"));
  fs::create_directories(dir.file("vendor"));
  fs::copy_file(BAD_ABI_PLUGIN, dir.file("vendor/bad_abi_plugin.so"));
  std::ofstream(dir.file("README.txt")) << "not a plugin\n";
  fs::create_directories(dir.file("vendor/deeper"));
  std::ofstream(dir.file("vendor/deeper/ignored.so")) << "two levels down: not scanned\n";

  PluginRegistry registry;
  std::vector<Status> errors = registry.loadPath({dir.path()});
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].code(), StatusCode::kIncompatible);
  EXPECT_NE(errors[0].message().find("ABI 999"), std::string::npos) << errors[0].message();
  EXPECT_NE(errors[0].message().find("vendor/bad_abi_plugin.so"), std::string::npos);
  EXPECT_TRUE(registry.find("TestCounterSource").isOk());
  EXPECT_TRUE(registry.createTransform("TestUpper").isOk());
  EXPECT_EQ(registry.list().size(), 2u);
}

TEST(SharedLibrary, LoadPathWithMissingFolderAndJunk) {
  TempDir dir;
  std::ofstream(dir.file("junk.so")) << "text\n";
  PluginRegistry registry;
  std::vector<Status> errors = registry.loadPath({dir.file("nope"), dir.path(), ""});
  ASSERT_EQ(errors.size(), 2u);
  EXPECT_NE(errors[0].message().find(dir.file("nope")), std::string::npos) << errors[0].message();
  EXPECT_NE(errors[1].message().find("junk.so"), std::string::npos) << errors[1].message();
  EXPECT_TRUE(registry.list().empty());
}

}  // namespace
}  // namespace ferry::runtime
