SELECT COUNT(*) FROM adult;
SELECT COUNT("Age"), SUM("Age"), AVG("Age") FROM adult WHERE "Sex" = 'Female';
SELECT AVG("Age"), COUNT("Age") AS n FROM adult;
SELECT "Education", COUNT(*) AS n, ROUND(AVG("Age"), 1) FROM adult GROUP BY "Education" HAVING n > 100 ORDER BY n DESC LIMIT 2;
SELECT "Sex", "Education", SUM("Capital Gain", contribution_bounds_per_group => (0, 100000)) FROM adult GROUP BY "Sex", "Education";
SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 2) SUM("Age") / COUNT(*) AS mean FROM adult WHERE "Age" BETWEEN 18 AND 65;
SELECT code, label FROM lookup WHERE code LIKE 'a%';
SELECT AVG("Capital Gain"), SUM("Capital Gain"), COUNT("Capital Gain") FROM adult;
SELECT "Sex", VAR_POP("Age"), STDDEV("Capital Gain") FROM adult GROUP BY "Sex";
