package org.broker.check.working_hours_test

import data.org.broker.check.working_hours

at(access, weekday, hour) := {
	"tool": {"name": "t", "access": access},
	"local_time": {"time_zone": "Europe/Berlin", "weekday": weekday, "hour": hour, "minute": 30},
}

test_writes_in_working_hours_pass if {
	every hour in [9, 12, 17] {
		count(working_hours.deny) == 0 with input as at("write", 3, hour)
	}
}

test_writes_at_night_and_at_weekends_are_denied if {
	every moment in [[1, 8], [5, 18], [6, 12], [7, 10]] {
		working_hours.deny == {{
			"reason": "outside_working_hours",
			"message": "write tools run Monday to Friday, 09:00 to 18:00 Europe/Berlin",
		}} with input as at("write", moment[0], moment[1])
	}
}

test_reads_run_at_any_time if {
	count(working_hours.deny) == 0 with input as at("read", 7, 3)
}
