// ListEntries with a maximum stops reading the directory there: a directory a hostile peer
// floods with names is never read into memory whole, and the listing says it was cut.
#include "cluster/shared_listing.h"

#include <gtest/gtest.h>

#include <fstream>

#include "support/temp_dir.h"

namespace trainwatch::cluster {
namespace {

class SharedListingTest : public ::testing::Test {
 protected:
  SharedListingTest() {
    for (int i = 0; i < 10; ++i) {
      std::string name = "r";  // appended: GCC 12's false -Wrestrict on "r" + std::string
      name += std::to_string(i);
      std::ofstream(dir_.path() / (name + "@gpu-1.json"));
    }
  }
  testing::TempDir dir_;
};

TEST_F(SharedListingTest, StopsAtTheMaximumAndSaysItWasCut) {
  const Listing listing = ListEntries(dir_.path(), 3);
  EXPECT_EQ(listing.entries.size(), 3u);
  EXPECT_TRUE(listing.cut);
  EXPECT_FALSE(listing.error);
}

TEST_F(SharedListingTest, ADirectoryWithinTheMaximumIsListedWholeAndNotCut) {
  for (std::size_t most : {10u, 11u}) {
    const Listing listing = ListEntries(dir_.path(), most);
    EXPECT_EQ(listing.entries.size(), 10u) << most;
    EXPECT_FALSE(listing.cut) << most;
  }
  std::error_code error;
  EXPECT_EQ(ListEntries(dir_.path(), error).size(), 10u);
  EXPECT_FALSE(error);
}

TEST_F(SharedListingTest, AMissingDirectoryIsAnError) {
  const Listing listing = ListEntries(dir_.path() / "gone", 3);
  EXPECT_TRUE(listing.entries.empty());
  EXPECT_FALSE(listing.cut);
  EXPECT_EQ(listing.error, std::errc::no_such_file_or_directory);
}

}  // namespace
}  // namespace trainwatch::cluster
