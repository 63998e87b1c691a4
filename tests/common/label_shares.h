// Goroutine pprof label sets of a profile and their shares of its samples, for the tests that
// compare switchback's labels with runtime/pprof's (labels_test for `record`,
// agent_labels_test for agent windows). Each caller names the labels that are switchback's own
// (pid, thread, ...; the agent adds host, exe, ...), which are not the goroutine's.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>

#include "profile/profile_data.h"

namespace sb::test {

using LabelMap = std::map<std::string, std::string>;

// S's string labels without the keys in OWN.
LabelMap LabelsExcept(const profile::Sample& s, const std::set<std::string>& own);
// "k1=v1,k2=v2" (sorted by key), "(none)" for no labels.
std::string LabelSetKey(const LabelMap& l);
// Label set key -> share of P's samples (by count); *TOTAL gets the sample count.
std::map<std::string, double> LabelSetShares(const profile::ProfileData& p, const std::set<std::string>& own,
                                             int64_t* total);

}  // namespace sb::test
