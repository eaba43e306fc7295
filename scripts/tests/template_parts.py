"""The parameters and conditions the hand-written templates of test_cfn.py and
test_network_paths.py share: a mode switch, a reserved concurrency and a list of types, and the
conditions over them (negation, equality, a joined list, and, or)."""

PARAMETERS = {
    "Mode": {"Type": "String", "Default": "on"},
    "Reserved": {"Type": "Number", "Default": 0},
    "Types": {"Type": "CommaDelimitedList", "Default": ""},
}

CONDITIONS = {
        "On": {"Fn::Equals": [{"Ref": "Mode"}, "on"]},
        "Off": {"Fn::Not": [{"Condition": "On"}]},
        "Unreserved": {"Fn::Equals": [{"Ref": "Reserved"}, 0]},
        "NoTypes": {"Fn::Equals": [{"Fn::Join": ["", {"Ref": "Types"}]}, ""]},
        "OnAndUnreserved": {"Fn::And": [{"Condition": "On"}, {"Condition": "Unreserved"}]},
        "OffOrNoTypes": {"Fn::Or": [{"Condition": "Off"}, {"Condition": "NoTypes"}]},
}
