#include "device/chip_factory.h"

#include <gtest/gtest.h>

namespace dfx::device {
namespace {

TEST(ChipFactoryTest, TheDefaultBackendIsTheEmulatorAndMakesAChip) {
  ASSERT_FALSE(ChipBackends().empty());
  EXPECT_STREQ(ChipBackends().front().name, kDefaultChipBackend);
  auto chip = MakeChip(kDefaultChipBackend, ChipOptions{});
  ASSERT_TRUE(chip.ok()) << chip.status().ToString();
  EXPECT_NE((*chip)->Describe().find("emulator"), std::string::npos) << (*chip)->Describe();
  auto made = ChipMakerFor()(ChipOptions{});
  ASSERT_TRUE(made.ok());
}

TEST(ChipFactoryTest, AnUnknownBackendIsRefusedNamingTheKnownOnes) {
  auto chip = MakeChip("ascend-real", ChipOptions{});
  ASSERT_FALSE(chip.ok());
  EXPECT_EQ(chip.status().code(), Code::kInvalidArgument);
  EXPECT_NE(chip.status().message().find("chip backend \"ascend-real\": expected one of this "
                                         "build's backends (emulator)"),
            std::string::npos)
      << chip.status().message();
  EXPECT_FALSE(ChipMakerFor("nope")(ChipOptions{}).ok());
}

}  // namespace
}  // namespace dfx::device
