// A shared library that loads fine but is not a ferry plugin: it exports no
// ferry_plugin_descriptor. The registry must say so clearly.
extern "C" __attribute__((visibility("default"))) int ferry_test_not_a_plugin() { return 42; }
