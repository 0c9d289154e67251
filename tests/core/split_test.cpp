#include "core/split.h"

#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <vector>

namespace trainwatch {
namespace {

using namespace std::string_view_literals;

std::vector<std::string> Pieces(std::string_view text, char separator) {
  std::vector<std::string> pieces;
  ForEachPiece(text, separator, [&](std::string_view piece) { pieces.emplace_back(piece); });
  return pieces;
}

TEST(ForEachPieceTest, AFinalSeparatorMakesNoEmptyLastPiece) {
  EXPECT_EQ(Pieces("a\nb\n", '\n'), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(Pieces("a\nb", '\n'), (std::vector<std::string>{"a", "b"}));
}

TEST(ForEachPieceTest, EmptyPiecesBetweenSeparatorsAreKept) {
  // argv ["a", "", "b"] as /proc/PID/cmdline holds it, and one ending in an empty argument.
  EXPECT_EQ(Pieces("a\0\0b\0"sv, '\0'), (std::vector<std::string>{"a", "", "b"}));
  EXPECT_EQ(Pieces("a\0\0"sv, '\0'), (std::vector<std::string>{"a", ""}));
}

TEST(ForEachPieceTest, AnEmptyTextHasNoPieces) {
  EXPECT_TRUE(Pieces("", '\n').empty());
  EXPECT_EQ(Pieces("\n", '\n'), (std::vector<std::string>{""}));
}

}  // namespace
}  // namespace trainwatch
