import FastpullFixtures
import Foundation
import Testing

/// The daemon's own page in a real browser (headless Chromium, driven by selenium): a URL typed and
/// added, its row active with a pause button and a bar that moves, paused and resumed with the row's
/// buttons, and complete; a second one removed with its button; the page on its WebSocket throughout,
/// redrawn at aria2's notifications.
@Suite("fastpull daemon's web page in Chromium")
struct WebPageTests {
    @Test func addPauseResumeInTheBrowser() async throws {
        try await InteropFolder.with("webpage") { folder in
            // 8 MiB at 1.5 MB/s in all, however many connections: at least 5 s, so the row is still
            // active when its pause button is clicked, whatever the machine's load.
            var settings = FixtureServer.Configuration()
            settings.totalRate = 1_500_000
            let server = try FixtureServer(settings)
            let (daemon, port) = try await DaemonHarness.start(in: folder, ["--rpc-secret", "pw"])
            let url = server.url("/gen/\(8 << 20)?seed=41").absoluteString
            // The second, slower still (8 MiB at 500 kB/s): active long enough to watch and remove.
            var slower = FixtureServer.Configuration()
            slower.totalRate = 500_000
            let slowServer = try FixtureServer(slower)
            let second = slowServer.url("/gen/\((8 << 20) + 1)?seed=42").absoluteString
            let script = """
                import json, time
                from selenium import webdriver
                from selenium.webdriver.common.by import By
                from selenium.webdriver.chrome.service import Service
                from selenium.common.exceptions import StaleElementReferenceException, NoSuchElementException
                options = webdriver.ChromeOptions()
                for flag in ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"]:
                    options.add_argument(flag)
                driver = webdriver.Chrome(options=options, service=Service("/usr/bin/chromedriver"))
                seen = {}
                def retry(action):
                    # The page redraws its rows every second: an element found a moment ago may be gone.
                    for _ in range(100):
                        try:
                            return action()
                        except (StaleElementReferenceException, NoSuchElementException):
                            time.sleep(0.05)
                    return action()
                def status():
                    cells = retry(lambda: [cell.text for cell in driver.find_elements(By.CSS_SELECTOR, "#rows tr td.status")])
                    return cells[0] if cells else None
                def status_of(name):
                    def find():
                        for row in driver.find_elements(By.CSS_SELECTOR, "#rows tr"):
                            if row.find_element(By.CSS_SELECTOR, "td").text == name:
                                return row.find_element(By.CSS_SELECTOR, "td.status").text
                    return retry(find)
                def wait_for(wanted, name=None):
                    read = (lambda: status_of(name)) if name else status
                    for _ in range(1200):
                        if read() == wanted:
                            return wanted
                        time.sleep(0.05)
                    return read()
                def bar():
                    return float(retry(lambda: driver.find_element(By.CSS_SELECTOR, "#rows tr progress").get_attribute("value")))
                try:
                    driver.get("http://127.0.0.1:\(port)/#token=pw")
                    seen["title"] = driver.title
                    seen["address"] = driver.current_url
                    driver.find_element(By.ID, "url").send_keys("\(url)")
                    driver.find_element(By.CSS_SELECTOR, "#add button").click()
                    seen["added"] = wait_for("active")
                    seen["active_buttons"] = retry(lambda: ",".join(b.text for b in driver.find_elements(By.CSS_SELECTOR, "#rows tr button")))
                    retry(lambda: driver.find_element(By.CSS_SELECTOR, "#rows tr button.aria2\\\\.pause").click())
                    seen["paused"] = wait_for("paused")
                    retry(lambda: driver.find_element(By.CSS_SELECTOR, "#rows tr button.aria2\\\\.unpause").click())
                    seen["finished"] = wait_for("complete")
                    seen["name"] = retry(lambda: driver.find_element(By.CSS_SELECTOR, "#rows tr td").text)
                    driver.find_element(By.ID, "url").send_keys("\(second)")
                    driver.find_element(By.CSS_SELECTOR, "#add button").click()
                    seen["second"] = wait_for("active", "\((8 << 20) + 1)")
                    # The second comes slowly (16 s): its bar is watched moving, then it is removed.
                    first = bar()
                    for _ in range(400):
                        if bar() > first:
                            break
                        time.sleep(0.05)
                    seen["bar_moved"] = "true" if bar() > first else "false"
                    def remove():
                        for row in driver.find_elements(By.CSS_SELECTOR, "#rows tr"):
                            if row.find_element(By.CSS_SELECTOR, "td").text == "\((8 << 20) + 1)":
                                row.find_element(By.CSS_SELECTOR, "button.aria2\\\\.remove").click()
                                return
                        raise NoSuchElementException("no row")
                    retry(remove)
                    seen["removed"] = wait_for("removed", "\((8 << 20) + 1)")
                    seen["socket"] = driver.execute_script("return socket !== null && socket.readyState === 1 ? 'open' : 'closed'")
                    seen["notified"] = str(driver.execute_script("return notified") > 0)
                    seen["message"] = driver.find_element(By.ID, "message").text
                finally:
                    driver.quit()
                print(json.dumps(seen))
                """
            let result = try await DaemonHarness.python(script)
            daemon.interrupt()
            _ = await daemon.finished()
            #expect(result.status == 0, "selenium: \(result.stderr)")
            // Every value as text (a status never seen is null in the script's answer).
            let seen =
                (try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any] ?? [:])
                .mapValues { "\($0)" }
            #expect(seen["title"] == "fastpull")
            #expect(seen["address"] == "http://127.0.0.1:\(port)/", "the secret left the address bar")
            #expect(seen["added"] == "active", "\(seen)")
            #expect(seen["paused"] == "paused", "\(seen)")
            #expect(seen["finished"] == "complete", "\(seen)")
            #expect(seen["message"] == "", "\(seen)")
            #expect(seen["bar_moved"] == "true", "\(seen)")
            #expect(seen["active_buttons"] == "Pause,Remove", "\(seen)")
            #expect(seen["second"] == "active", "\(seen)")
            #expect(seen["removed"] == "removed", "\(seen)")
            #expect(seen["socket"] == "open", "\(seen)")
            #expect(seen["notified"] == "True", "\(seen)")
            let name = try #require(seen["name"])
            let file = try Data(contentsOf: URL(fileURLWithPath: folder + "/" + name))
            #expect(file == Data(FixtureContent.bytes(count: 8 << 20, seed: 41)))
        }
    }
}
