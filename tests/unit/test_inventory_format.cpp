// JSON writer, the inventory's JSON and flat key/value forms.
#include <gtest/gtest.h>

#include <unistd.h>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <stdexcept>

#include "inventory/HostInventory.hpp"
#include "inventory/InventoryFormat.hpp"
#include "inventory/InventoryWire.hpp"
#include "inventory/JsonWriter.hpp"

using namespace fabscope::inventory;

namespace {

InventoryOptions fixtureOptions() {
  InventoryOptions options;
  options.sysRoot = std::string(FABSCOPE_TEST_DATA_DIR) + "/sysfs/host-a";
  options.hostname = "host-a";
  options.useVerbs = options.useHwloc = options.useCuda = false;
  options.environment = {"NCCL_SOCKET_IFNAME=ens1f0", "UCX_TLS=rc,\"quoted\"\\x"};
  return options;
}

std::string valueOf(const KeyValues& kv, const std::string& key) {
  for (const auto& [k, v] : kv)
    if (k == key) return v;
  return "<absent>";
}

// python3's json module as an independent parser; skipped where python3 is absent.
bool pythonAccepts(const std::string& json) {
  const auto file =
      std::filesystem::temp_directory_path() / ("fabscope_inventory_" + std::to_string(::getpid()) + ".json");
  {
    std::ofstream out(file);
    out << json;
  }
  const std::string command = "python3 -c 'import json,sys; json.load(open(sys.argv[1]))' " + file.string();
  const int rc = std::system(command.c_str());
  std::filesystem::remove(file);
  return rc == 0;
}

}  // namespace

TEST(JsonWriter, EscapesStrings) {
  EXPECT_EQ(jsonQuote("plain"), "\"plain\"");
  EXPECT_EQ(jsonQuote("a\"b\\c"), "\"a\\\"b\\\\c\"");
  EXPECT_EQ(jsonQuote("line\nnext\ttab\r"), "\"line\\nnext\\ttab\\r\"");
  EXPECT_EQ(jsonQuote(std::string("nul\0x", 5)), "\"nul\\u0000x\"");
  EXPECT_EQ(jsonQuote("\x01\x1f"), "\"\\u0001\\u001f\"");
  EXPECT_EQ(jsonQuote("caf\xc3\xa9"), "\"caf\xc3\xa9\"");             // valid UTF-8 passes through
  EXPECT_EQ(jsonQuote("bad\xff"), "\"bad\\ufffd\"");                  // invalid byte replaced
  EXPECT_EQ(jsonQuote("\xc0\xaf"), "\"\\ufffd\\ufffd\"");             // overlong form rejected
  EXPECT_EQ(jsonQuote("\xed\xa0\x80"), "\"\\ufffd\\ufffd\\ufffd\"");  // surrogate rejected
}

TEST(JsonWriter, WritesNestedDocumentsCompactly) {
  JsonWriter w(0);
  w.beginObject();
  w.key("n").value(3);
  w.key("x").value(0.5);
  w.key("inf").value(1.0 / 0.0);
  w.key("list").beginArray().value("a").value(true).nullValue().endArray();
  w.key("empty").beginObject().endObject();
  w.endObject();
  EXPECT_EQ(w.str(), R"({"n":3,"x":0.5,"inf":null,"list":["a",true,null],"empty":{}})");
}

TEST(JsonWriter, RejectsMisuse) {
  JsonWriter w;
  w.beginObject();
  EXPECT_THROW(w.value(1), std::logic_error);
  EXPECT_THROW(w.endArray(), std::logic_error);
  EXPECT_THROW(w.str(), std::logic_error);
}

TEST(InventoryFormat, JsonIsValidAndComplete) {
  HostInventory inventory = collectHostInventory(fixtureOptions());
  const std::string json = toJson(inventory);
  EXPECT_NE(json.find("\"hostname\": \"host-a\""), std::string::npos);
  EXPECT_NE(json.find("\"rate\": \"200 Gb/sec (4X HDR)\""), std::string::npos);
  EXPECT_NE(json.find("\"type\": \"RoCE v2\""), std::string::npos);
  EXPECT_NE(json.find("\"speed_mbps\": null"), std::string::npos) << "eth0 has an unknown speed";
  EXPECT_NE(json.find("\"UCX_TLS\": \"rc,\\\"quoted\\\"\\\\x\""), std::string::npos);
  if (std::system("python3 -c '' >/dev/null 2>&1") != 0) GTEST_SKIP() << "python3 not available to cross-check JSON";
  EXPECT_TRUE(pythonAccepts(json));
  EXPECT_TRUE(pythonAccepts(toJson(inventory, 0)));
}

TEST(InventoryFormat, FlatKeyValues) {
  HostInventory inventory = collectHostInventory(fixtureOptions());
  KeyValues kv = toKeyValues(inventory);
  EXPECT_EQ(valueOf(kv, "host/name"), "host-a");
  EXPECT_EQ(valueOf(kv, "net/ens1f0/mtu"), "9000");
  EXPECT_EQ(valueOf(kv, "net/eth0/speed_mbps"), "<absent>");
  EXPECT_EQ(valueOf(kv, "rdma/mlx5_0/fw_ver"), "20.31.1014");
  EXPECT_EQ(valueOf(kv, "rdma/mlx5_0/port/1/rate_gbps"), "200");
  EXPECT_EQ(valueOf(kv, "rdma/mlx5_0/port/1/width"), "4");
  EXPECT_EQ(valueOf(kv, "rdma/mlx5_1/port/1/link_layer"), "Ethernet");
  EXPECT_EQ(valueOf(kv, "rdma/mlx5_1/port/1/gid/3"), "0000:0000:0000:0000:0000:ffff:c0a8:0a0b RoCE v2 ens1f0");
  EXPECT_EQ(valueOf(kv, "env/NCCL_SOCKET_IFNAME"), "ens1f0");
  // Keys are unique, so they can be a table's primary key.
  std::set<std::string> keys;
  for (const auto& [k, v] : kv) EXPECT_TRUE(keys.insert(k).second) << "duplicate key " << k;
}

TEST(InventoryFormat, TextNamesDevicesAndPorts) {
  HostInventory inventory = collectHostInventory(fixtureOptions());
  const std::string text = toText(inventory);
  EXPECT_NE(text.find("mlx5_0"), std::string::npos);
  EXPECT_NE(text.find("200 Gb/sec (4X HDR)"), std::string::npos);
  EXPECT_NE(text.find("(2 RoCE v2)"), std::string::npos);
}

TEST(InventoryWire, RoundTripsExactly) {
  HostInventory inventory = collectHostInventory(fixtureOptions());
  GpuInfo gpu;
  gpu.index = 1;
  gpu.model = "GPU with \"quotes\"\nand 1:2 colons";
  gpu.numaNode = 1;
  inventory.gpus.push_back(gpu);
  inventory.affinity.push_back({1, "ens1f0", "NODE", true});
  inventory.rdmaDevices[0].ports[0].rateGbps = 2.5;
  inventory.notes.push_back("");
  const std::string bytes = serializeInventory(inventory);
  EXPECT_EQ(deserializeInventory(bytes), inventory);
}

TEST(InventoryWire, RejectsDamagedInput) {
  HostInventory inventory = collectHostInventory(fixtureOptions());
  const std::string bytes = serializeInventory(inventory);
  EXPECT_THROW(deserializeInventory(bytes.substr(0, bytes.size() - 3)), std::runtime_error);
  EXPECT_THROW(deserializeInventory(bytes + "x"), std::runtime_error);
  EXPECT_THROW(deserializeInventory("not an inventory"), std::runtime_error);
}
