// HeadOfRefresh and Supersedes on the refreshes a tqdm bar writes to a file: which ones a
// later one on the same line makes pointless to parse.
#include "detect/refresh_head.h"

#include <gtest/gtest.h>

namespace trainwatch::detect {
namespace {

// Whether `later` supersedes `earlier`, both read as refreshes.
bool SupersededBy(std::string_view earlier, std::string_view later) {
  const std::optional<RefreshHead> first = HeadOfRefresh(earlier);
  const std::optional<RefreshHead> next = HeadOfRefresh(later);
  return first && next && Supersedes(*next, *first);
}

TEST(SupersededBy, OnlyALaterWholeRefreshOfTheSameBarThatDidNotGoBack) {
  const std::string_view at45 =
      "[rank3]: Epoch 1:  45%|####5     | 45/100 [00:09<00:11,  4.90it/s, loss=0.3]";
  const std::string_view at46 =
      "[rank3]: Epoch 1:  46%|####6     | 46/100 [00:09<00:11,  4.90it/s, loss=0.3]";
  EXPECT_TRUE(SupersededBy(at45, at46));
  EXPECT_TRUE(SupersededBy(at45, at45));
  EXPECT_FALSE(SupersededBy(at46, at45)) << "went back: the restart is parsed";
  // The desc's numbers may change (set_description(f"Epoch {e} loss {loss:.3f}")): the key
  // is the same bar's.
  EXPECT_TRUE(SupersededBy("Epoch 1 loss 0.31:  45%|####5     | 45/100 [00:09<00:11,  4.9it/s]",
                           "Epoch 1 loss 0.29:  46%|####6     | 46/100 [00:09<00:11,  4.9it/s]"));
  EXPECT_TRUE(SupersededBy(
      at45, "[rank3]: Epoch 2:  46%|####6     | 46/100 [00:09<00:11,  4.90it/s, loss=0.3]"));
  // Another bar: another rank (the writer prefix keeps its digits), a nested bar.
  EXPECT_FALSE(SupersededBy(
      at45, "[rank2]: Epoch 1:  46%|####6     | 46/100 [00:09<00:11,  4.90it/s, loss=0.3]"));
  EXPECT_FALSE(SupersededBy(at45, "Validation:  46%|####6     | 46/100 [00:09<00:11,  4.9it/s]"));
  // The writer prefix after blanks, or in colour: split as the key is (after the blanks, the
  // codes stripped), never read as a desc whose numbers are alike.
  EXPECT_FALSE(SupersededBy(" [rank3] Epoch 1:  45%|####5     | 45/100 [00:09<00:11,  4.9it/s]",
                            " [rank2] Epoch 1:  46%|####6     | 46/100 [00:09<00:11,  4.9it/s]"));
  EXPECT_FALSE(SupersededBy(
      "\x1b[32m[rank3]\x1b[0m Epoch 1:  45%|####5     | 45/100 [00:09<00:11,  4.9it/s]",
      "\x1b[32m[rank3]\x1b[0m Epoch 1:  46%|####6     | 46/100 [00:09<00:11,  4.9it/s]"));
  // A refresh still being written (no closing ']') supersedes nothing; neither does a line
  // that is no bar, nor a bar without a percentage.
  EXPECT_FALSE(SupersededBy(at45, "[rank3]: Epoch 1:  46%|####6     | 46/100 [00:09<00:1"));
  EXPECT_FALSE(SupersededBy(at45, "step 46 loss 0.3"));
  EXPECT_FALSE(SupersededBy("12it [00:01, 9.8it/s]", "13it [00:01, 9.8it/s]"));
  EXPECT_FALSE(SupersededBy("", ""));
  EXPECT_FALSE(SupersededBy("%|]", "%|]"));
}

TEST(HeadOfRefresh, SplitsAsTheBarsKeyDoes) {
  const std::optional<RefreshHead> head =
      HeadOfRefresh("  [rank3]: Epoch 1:  45%|####5     | 45/100 [00:09<00:11,  4.9it/s]  ");
  ASSERT_TRUE(head);
  EXPECT_EQ(head->prefix, "[rank3]: ");
  EXPECT_EQ(head->desc, "Epoch 1");
  EXPECT_EQ(head->percent, 45);
  EXPECT_FALSE(HeadOfRefresh("Epoch 1:  45%|####5     | 45/100 [00:09<00:1")) << "unfinished";
  EXPECT_FALSE(HeadOfRefresh("1000%|#| 10/1 [00:01<00:00, 9.1it/s]")) << "no percentage";
}

}  // namespace
}  // namespace trainwatch::detect
