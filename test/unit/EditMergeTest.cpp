// EditMerge: the one place where edits meet (a step's own, a translation unit's for verification,
// a report's for --fix): duplicates kept once, a unit with an overlapping edit refused whole.
#include "ampmigrate/EditMerge.h"
#include <gtest/gtest.h>

using clang::tooling::Replacement;
using namespace ampmigrate;

TEST(EditMerge, IdenticalEditsAreKeptOnceInTheirOrder) {
  EditMerge M;
  EXPECT_FALSE(M.add({{"a.cpp", 10, 2, "x"}, {"a.cpp", 0, 0, "#include <amp/torch.h>\n"}, {"a.cpp", 10, 2, "x"}}));
  EXPECT_FALSE(M.add({{"./a.cpp", 0, 0, "#include <amp/torch.h>\n"}, {"a.cpp", 20, 1, "y"}}));
  ASSERT_EQ(M.edits().size(), 3u);
  EXPECT_EQ(M.edits()[0].getOffset(), 10u);
  EXPECT_EQ(M.edits()[1].getOffset(), 0u);
  EXPECT_EQ(M.edits()[2].getOffset(), 20u);
  ASSERT_EQ(M.byFile().size(), 1u); // "./a.cpp" is "a.cpp"
  EXPECT_EQ(M.byFile().begin()->second.size(), 3u);
}

TEST(EditMerge, AnOverlappingUnitIsRefusedWholeAndNamesTheOtherUnit) {
  EditMerge M;
  EXPECT_FALSE(M.add({{"a.cpp", 10, 5, "x"}}));
  std::optional<EditOverlap> O = M.add({{"a.cpp", 30, 1, "z"}, {"a.cpp", 12, 1, "y"}});
  ASSERT_TRUE(O);
  EXPECT_FALSE(O->Sibling);
  EXPECT_EQ(O->TheirUnit, 0u);
  EXPECT_EQ(O->Mine.getOffset(), 12u);
  EXPECT_EQ(O->Theirs.getOffset(), 10u);
  // Nothing of the refused unit was kept, not even its edit that did not overlap.
  ASSERT_EQ(M.edits().size(), 1u);
  EXPECT_EQ(M.byFile().at("a.cpp").size(), 1u);
  EXPECT_EQ(overlapText(*O), "a.cpp@12+1 -> `y` overlaps a.cpp@10+5 -> `x`");
}

TEST(EditMerge, TwoDifferentInsertionsAtOneOffsetCollide) {
  std::vector<Replacement> Out;
  std::optional<EditOverlap> O = mergeUnit({{"a.cpp", 4, 0, "a"}, {"a.cpp", 4, 0, "b"}}, Out);
  ASSERT_TRUE(O);
  EXPECT_TRUE(O->Sibling);
  EXPECT_TRUE(Out.empty());
}

TEST(EditMerge, InsertionsAtEitherEndOfAReplacedRangeAreFine) {
  std::vector<Replacement> Out;
  EXPECT_FALSE(mergeUnit({{"a.cpp", 10, 5, "x"}, {"a.cpp", 10, 0, "<"}, {"a.cpp", 15, 0, ">"}}, Out));
  EXPECT_EQ(Out.size(), 3u);
  EXPECT_TRUE(editsOverlap({"a.cpp", 10, 5, "x"}, {"a.cpp", 12, 0, "in"}));
  EXPECT_FALSE(editsOverlap({"a.cpp", 10, 5, "x"}, {"a.cpp", 15, 3, "next"}));
}

TEST(EditMerge, EditsOfDifferentFilesNeverCollide) {
  EditMerge M;
  EXPECT_FALSE(M.add({{"a.h", 0, 3, "x"}}));
  EXPECT_FALSE(M.add({{"b.h", 0, 3, "y"}}));
  EXPECT_EQ(M.byFile().size(), 2u);
  EXPECT_EQ(M.units(), 2u);
}
