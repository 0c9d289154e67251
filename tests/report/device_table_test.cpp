#include "report/device_table.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "support/file_text.h"

namespace trainwatch::report {
namespace {

TEST(ParseSmiCsv, ReadsColumnsByTheirHeaderAndAddsTheHeadersUnits) {
  // hl-smi -Q ... -f csv,nounits: units only in the header.
  const std::vector<DeviceRow> rows = ParseSmiCsv(
      "hl-smi",
      "index, name, bus_id, utilization.aip [%], memory.used [MiB], memory.total [MiB], "
      "temperature.aip [C], power.draw [W]\n"
      "0, HL-225, 0000:19:00.0, 97, 90112, 98304, 41, 380\n"
      "1, HL-225, 0000:1a:00.0, 0, 512, 98304, 30, 95\n"
      "hl-smi: device 2 is not responding\n");
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].tool, "hl-smi");
  EXPECT_EQ(rows[0].index, "0");
  EXPECT_EQ(rows[0].name, "HL-225");
  EXPECT_EQ(rows[0].bus_id, "0000:19:00.0");
  EXPECT_EQ(rows[0].utilization, "97 %");
  EXPECT_EQ(rows[0].memory, "90112 MiB / 98304 MiB");
  EXPECT_EQ(rows[0].temperature, "41 C");
  EXPECT_EQ(rows[1].power, "95 W");
  EXPECT_EQ(rows[1].errors, "");
}

TEST(ParseSmiCsv, KeepsUnitsTheValuesCarryAndTheErrorCount) {
  const std::vector<DeviceRow> rows = ParseSmiCsv(
      "nvidia-smi",
      "index, name, pci.bus_id, driver_version, utilization.gpu [%], memory.used [MiB], "
      "memory.total [MiB], temperature.gpu, power.draw [W], "
      "ecc.errors.uncorrected.volatile.total\n"
      "0, NVIDIA H100 80GB HBM3, 00000000:19:00.0, 550.54.15, 100 %, 80012 MiB, 81559 MiB, 67, "
      "690.12 W, 2\n");
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].utilization, "100 %");
  EXPECT_EQ(rows[0].memory, "80012 MiB / 81559 MiB");
  EXPECT_EQ(rows[0].temperature, "67");
  EXPECT_EQ(rows[0].power, "690.12 W");
  EXPECT_EQ(rows[0].errors, "2");
}

TEST(ParseSmiCsv, WhatIsNoDeviceQueryGivesNoRow) {
  EXPECT_TRUE(ParseSmiCsv("nvidia-smi", "").empty());
  EXPECT_TRUE(ParseSmiCsv("nvidia-smi",
                          "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA "
                          "driver.\n")
                  .empty());
}

TEST(ParseSmiCsv, TheRealOutputsOfTheFieldHaveTheirDevices) {
  const std::string shared = TRAINWATCH_TEST_SHARED_DIR;
  if (!std::filesystem::exists(shared + "/fixtures")) {
    GTEST_SKIP() << "no " << shared
                 << "/fixtures: the shared/ folder sits beside the checkout only in development "
                    "and CI";
  }
  const std::vector<DeviceRow> gaudi =
      ParseSmiCsv("hl-smi", testing::ReadFile(shared + "/fixtures/habana/hl-smi-query-aip.csv"));
  ASSERT_EQ(gaudi.size(), 8u);
  EXPECT_EQ(gaudi[0].name, "HL-205");
  EXPECT_EQ(gaudi[0].utilization, "15 %");
  EXPECT_EQ(gaudi[0].memory, "512 MiB / 32768 MiB");
  const std::vector<DeviceRow> volta = ParseSmiCsv(
      "nvidia-smi", testing::ReadFile(shared + "/fixtures/nvidia/nvidia-smi-query-gpu.csv"));
  EXPECT_EQ(volta.size(), 16u);
}

}  // namespace
}  // namespace trainwatch::report
