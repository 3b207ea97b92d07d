// Topology labels from a file or from Slurm, and the site-span check.
#include <gtest/gtest.h>

#include "inventory/Topology.hpp"

using namespace fabscope::inventory;

namespace {
const char* kTopology = R"(hosts:
  node01: {site: dc1, pod: p1, leaf: leaf01}
  node02: {site: dc1, pod: p1, leaf: leaf02}
  "far-*": {site: dc2, pod: q1}
)";
}

TEST(Topology, FileExactNamesThenPatterns) {
  TopologyFile topology = parseTopology(kTopology, "topo.yaml");
  auto node = lookupTopology(topology, "node02");
  ASSERT_TRUE(node);
  EXPECT_EQ(node->site, "dc1");
  EXPECT_EQ(node->leaf, "leaf02");
  EXPECT_EQ(node->source, "file");
  auto far = lookupTopology(topology, "far-17");
  ASSERT_TRUE(far);
  EXPECT_EQ(far->site, "dc2");
  EXPECT_EQ(far->leaf, "");
  EXPECT_FALSE(lookupTopology(topology, "elsewhere"));
}

TEST(Topology, FileErrorsNameTheLine) {
  try {
    parseTopology("hosts:\n  node01: {site: dc1, rack: r1}\n", "topo.yaml");
    FAIL() << "an unknown key must be rejected";
  } catch (const TopologyError& e) {
    EXPECT_NE(std::string(e.what()).find("topo.yaml:2:"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("'rack'"), std::string::npos) << e.what();
  }
}

TEST(Topology, SlurmAddress) {
  auto three = labelFromSlurm("dc1.spine2.leaf7.node12", "switch.switch.switch.node");
  ASSERT_TRUE(three);
  EXPECT_EQ(three->site, "dc1");
  EXPECT_EQ(three->pod, "spine2");
  EXPECT_EQ(three->leaf, "leaf7");
  auto two = labelFromSlurm("s0.s3.node1", "switch.switch.node");
  ASSERT_TRUE(two);
  EXPECT_EQ(two->site, "");
  EXPECT_EQ(two->pod, "s0");
  EXPECT_EQ(two->leaf, "s3");
  EXPECT_FALSE(labelFromSlurm("a.b", "switch.switch.node"));
  EXPECT_FALSE(labelFromSlurm("node1", "node"));
}

TEST(Topology, FileWinsOverSlurm) {
  TopologyFile topology = parseTopology(kTopology, "topo.yaml");
  std::vector<std::string> env = {"SLURM_TOPOLOGY_ADDR=x.y.z.node01",
                                  "SLURM_TOPOLOGY_ADDR_PATTERN=switch.switch.switch.node"};
  EXPECT_EQ(topologyForHost("node01", &topology, env).site, "dc1");
  EXPECT_EQ(topologyForHost("other", &topology, env).site, "x");
  EXPECT_EQ(topologyForHost("other", nullptr, {}).source, "");
}

TEST(Topology, SpansSites) {
  TopologyLabel a{"dc1", "p1", "l1", "file"}, b{"dc1", "p2", "l3", "file"}, c{"dc2", "q", "m", "file"}, unknown;
  EXPECT_FALSE(spansSites({a, b}));
  EXPECT_FALSE(spansSites({a, unknown}));
  EXPECT_TRUE(spansSites({a, b, c}));
  EXPECT_EQ(sitesOf({c, a, b}), (std::vector<std::string>{"dc1", "dc2"}));
}
